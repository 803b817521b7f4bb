// Command fakeagent stands in for an ACP agent in the proxy's tests and
// benchmark. Modes:
//
//	fakeagent echo              write back every line read, until EOF
//	fakeagent play FILE         play the agent's side of a recording: write
//	                            each agent->client message, and read one
//	                            line for each client->agent one
//	fakeagent hostile N         write a partial line in pieces, a line of N
//	                            bytes, lines that are not JSON and one
//	                            without a newline, then exit 3
//	fakeagent env               write a JSON line with its cwd and $FAKE_ENV
//	fakeagent sleep             sleep until a signal, then exit by it
//	fakeagent flood N SIZE [S]  write N JSON lines of SIZE bytes (of ACP
//	                            session S when given), then exit
//	fakeagent orphan D          start a child that holds stdout open for D
//	                            writing nothing, write a line, then exit
//	fakeagent linger D          sleep D, writing nothing (orphan's child)
//	fakeagent spew N            write N bytes of numbered lines to stderr,
//	                            then a JSON line to stdout, then exit
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()
	switch os.Args[1] {
	case "echo":
		in := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := in.ReadBytes('\n')
			out.Write(line)
			if in.Buffered() == 0 {
				out.Flush()
			}
			if err != nil {
				return
			}
		}
	case "play":
		play(os.Args[2], out)
	case "hostile":
		n, _ := strconv.Atoi(os.Args[2])
		// A partial line, written in three pieces with pauses.
		for _, p := range []string{`{"jsonrpc":"2.0",`, `"method":"x/partial",`, `"params":{}}` + "\n"} {
			out.WriteString(p)
			out.Flush()
			time.Sleep(20 * time.Millisecond)
		}
		out.WriteString("a log line that is not JSON\n")
		// A huge line: one JSON string of n bytes.
		out.WriteString(`{"jsonrpc":"2.0","method":"x/huge","params":{"pad":"`)
		chunk := strings.Repeat("z", 1<<16)
		for left := n; left > 0; left -= len(chunk) {
			out.WriteString(chunk[:min(left, len(chunk))])
		}
		out.WriteString("\"}}\n")
		out.WriteString("\x1b[31mnot json either\x1b[0m\r\n")
		out.WriteString(`{"jsonrpc":"2.0","method":"x/last"}`) // no newline at the end
		out.Flush()
		os.Exit(3)
	case "env":
		wd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]string{"cwd": wd, "env": os.Getenv("FAKE_ENV")})
		out.Write(append(b, '\n'))
	case "sleep":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"x/ready"}`)
		out.Flush()
		s := <-c
		signal.Reset()
		syscall.Kill(os.Getpid(), s.(syscall.Signal))
		time.Sleep(time.Second)
	case "flood":
		n, _ := strconv.Atoi(os.Args[2])
		size, _ := strconv.Atoi(os.Args[3])
		session := ""
		if len(os.Args) > 4 {
			session = `"sessionId":` + strconv.Quote(os.Args[4]) + ","
		}
		line := `{"jsonrpc":"2.0","method":"x/flood","params":{` + session + `"pad":"` + strings.Repeat("f", max(0, size-52-len(session))) + "\"}}\n"
		for range n {
			out.WriteString(line)
		}
	case "orphan":
		child := exec.Command(os.Args[0], "linger", os.Args[2])
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"x/orphaned"}`)
	case "spew":
		n, _ := strconv.Atoi(os.Args[2])
		errOut := bufio.NewWriterSize(os.Stderr, 1<<16)
		for i := 0; n > 0; i++ {
			l := fmt.Sprintf("stderr line %08d %s\n", i, strings.Repeat("s", 40))
			l = l[:min(n, len(l))]
			errOut.WriteString(l)
			n -= len(l)
		}
		errOut.Flush()
		fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"x/spewed"}`)
	case "linger":
		d, _ := time.ParseDuration(os.Args[2])
		time.Sleep(d)
	default:
		fmt.Fprintf(os.Stderr, "fakeagent: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}

// play writes the agent's messages of a recording and reads a line for each
// of the client's, so that the exchange keeps the recording's order.
func play(file string, out *bufio.Writer) {
	fh, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.Dir == "client->agent" {
			out.Flush()
			if _, err := in.ReadBytes('\n'); err == io.EOF {
				return
			}
			continue
		}
		out.Write(l.Msg)
		out.WriteByte('\n')
	}
	out.Flush()
	io.Copy(io.Discard, in) // until the client closes
}
