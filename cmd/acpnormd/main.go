// Command acpnormd is the acpnorm daemon: a gRPC service that turns the raw
// ACP tool-call traffic of coding agents into one provider-neutral record of
// every shell command.
//
// Usage:
//
//	acpnormd [serve] [flags]        serve gRPC (default 127.0.0.1:50051)
//	acpnormd replay [flags] [FILE]  play a recorded ACP wire log through the service
//
// Every serve flag can also be set by an environment variable, named in its
// help; a flag on the command line wins.
package main

import (
	"fmt"
	"os"
)

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "replay" || args[0] == "help") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "replay":
		err = replayCmd(args)
	case "help":
		fmt.Print(usage)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acpnormd:", err)
		os.Exit(1)
	}
}

const usage = `acpnormd: ACP shell tool calls in, normalized ShellExec records out.

  acpnormd [serve] [flags]       serve gRPC; see 'acpnormd serve -h'
  acpnormd replay [flags] [FILE] play a recording through the service; see 'acpnormd replay -h'
`
