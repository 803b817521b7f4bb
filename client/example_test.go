package client_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/acpnorm/acpnorm/client"
	acpnormv1 "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// An orchestrator streams the ACP messages of one session to a fleet of
// acpnormd and reads each shell command's folded state. A replica that
// dies mid-session, a store that loses the session, a request refused as
// not applied: the Session reconnects, sends again and rebuilds, and the
// calls come out as one process would make them.
func ExampleSession() {
	c, err := client.New([]string{"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"},
		client.WithBackoff(50*time.Millisecond, 2*time.Second)) // client.WithTLS(cfg), client.WithToken(token)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s := c.Session("s1", client.OnRevision(func(x *acpnormv1.ShellExec) {
		fmt.Println(x.GetToolCallId(), x.GetRevision(), x.GetState()) // live, in order, never twice
	}))
	ctx := context.Background()
	sc := bufio.NewScanner(os.Stdin) // one JSON-RPC message of the agent per line
	for sc.Scan() {
		if err := s.Send(ctx, acpnormv1.Direction_DIRECTION_AGENT_TO_CLIENT, append([]byte(nil), sc.Bytes()...)); err != nil {
			log.Fatal(err) // the Session gave up, or client.ErrSessionFull
		}
	}
	if err := s.Close(ctx); err != nil { // SessionClosed; waits for every answer
		log.Fatal(err)
	}
	for _, call := range s.Calls() {
		fmt.Println(call.GetCommand(), call.GetOutcome(), call.GetExitCode(), len(call.GetOutput().GetText()))
	}
	st := s.Stats()
	fmt.Println("reconnects", st.Reconnects, "resent", st.Resent, "losses rebuilt", st.Losses)
}
