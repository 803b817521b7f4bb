package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Two identities use the same session id and tool call ids at once, on
// streams open side by side. Bob ends the turn (cancelled), closes the
// session and feeds the call after his close; alice's call is untouched
// by all of it: her revisions go on 1, 2, 3 with her text alone, she
// never sees his, and she ends her call with her own exit code. Bob's
// close released only his call.
func TestHostileSameIDsTwoIdentitiesAtOnce(t *testing.T) {
	client := tokensClient(t, nil, "alice alice-secret\nbob bob-secret\n", nil)
	a := openTCP(t, client, bearer(t, "alice-secret"))
	b := openTCP(t, client, bearer(t, "bob-secret"))

	a.send("S1", 1, openCall("c1", "cat secrets.env"))
	b.send("S1", 1, openCall("c1", "echo bob"))
	x := a.next().GetShellExec()
	require.EqualValues(t, 1, x.GetRevision())
	require.Equal(t, "cat secrets.env", x.GetCommand())
	x = b.next().GetShellExec()
	require.EqualValues(t, 1, x.GetRevision())
	require.Equal(t, "echo bob", x.GetCommand())

	a.send("S1", 2, delta("c1", "hunter2\n"))
	b.send("S1", 2, delta("c1", "bob's\n"))
	assert.Equal(t, "hunter2\n", a.next().GetShellExec().GetOutput().GetText())
	assert.Equal(t, "bob's\n", b.next().GetShellExec().GetOutput().GetText())

	require.NoError(t, b.st.Send(turnEnded("S1", 3, true)))
	x = b.next().GetShellExec()
	assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_CANCELLED, x.GetOutcome(), "bob's own call")
	require.NoError(t, b.st.Send(sessionClosed("S1", 4)))
	b.send("S1", 5, delta("c1", "after bob's close"))
	b.send("S1", 6, finish("c1", 0))
	// Bob, holding no session S1 any more, ends its turn and closes it.
	require.NoError(t, b.st.Send(turnEnded("S1", 7, true)))
	require.NoError(t, b.st.Send(sessionClosed("S1", 8)))
	fromB := b.rest()
	require.Len(t, fromB, 2)
	for _, r := range fromB {
		fe := r.GetFrameError()
		require.NotNil(t, fe, "%v", r)
		assert.EqualValues(t, codes.FailedPrecondition, fe.GetCode(), "bob's call is released: %v", fe)
	}
	namesNoneOfA(t, fromB)

	a.send("S1", 3, delta("c1", "more\n"))
	x = a.next().GetShellExec()
	assert.EqualValues(t, 3, x.GetRevision())
	assert.Equal(t, pb.ShellState_SHELL_STATE_RUNNING, x.GetState(), "bob's turn and close ended alice's call: %v", x)
	assert.Equal(t, "more\n", x.GetOutput().GetText())
	a.send("S1", 4, finish("c1", 3))
	x = a.next().GetShellExec()
	assert.EqualValues(t, 4, x.GetRevision())
	assert.Equal(t, pb.ShellOutcome_SHELL_OUTCOME_FAILED, x.GetOutcome())
	assert.EqualValues(t, 3, x.GetExitCode())
	assert.Equal(t, "hunter2\nmore\n", x.GetOutput().GetText())
	assert.NotContains(t, x.String(), "bob")
}

// An identity at its stream quota gets its slot back when one of its
// streams ends, however it ends (the client half-closes it, or cancels it
// without a word); another identity's streams are never refused for it.
func TestHostileStreamQuotaSlotsComeBack(t *testing.T) {
	client := tokensClient(t, nil, "alice a-token\nbob b-token\n", func(o *ServerOptions) { o.MaxStreamsPerIdentity = 2 })

	type open struct {
		st     pb.NormalizerService_NormalizeClient
		cancel context.CancelFunc
	}
	// served opens a stream and says whether it is served: its first frame
	// is answered, or the refusal is returned.
	var calls int
	served := func(token string) (open, error) {
		calls++
		ctx, cancel := context.WithTimeout(bearer(t, token), 10*time.Second)
		t.Cleanup(cancel)
		st, err := client.Normalize(ctx)
		require.NoError(t, err)
		// A refused stream may fail the send (io.EOF): Recv says why.
		_ = st.Send(frameReq("s", 0, openCall(fmt.Sprintf("c%d", calls), "true")))
		if _, err := st.Recv(); err != nil {
			return open{}, err
		}
		return open{st, cancel}, nil
	}
	refused := func(token string) {
		t.Helper()
		_, err := served(token)
		require.Error(t, err)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Contains(t, status.Convert(err).Message(), "--quota-streams")
	}
	// eventually: the slot comes back once the server saw the stream end.
	eventually := func(token string) open {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			o, err := served(token)
			if err == nil {
				return o
			}
			require.True(t, time.Now().Before(deadline), "the slot never came back: %v", err)
			time.Sleep(20 * time.Millisecond)
		}
	}
	a1, err := served("a-token")
	require.NoError(t, err)
	a2, err := served("a-token")
	require.NoError(t, err)
	refused("a-token")
	for range 2 {
		_, err := served("b-token")
		require.NoError(t, err, "bob's streams")
	}
	// Half-closed by the client.
	require.NoError(t, a1.st.CloseSend())
	for {
		if _, err := a1.st.Recv(); err != nil {
			break
		}
	}
	a3 := eventually("a-token")
	refused("a-token")
	// Cancelled by the client.
	a2.cancel()
	eventually("a-token")
	refused("a-token")
	// Refused streams took no slot.
	for range 20 {
		refused("a-token")
	}
	a3.cancel()
	eventually("a-token")
}
