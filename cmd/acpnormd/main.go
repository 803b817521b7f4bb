// Command acpnormd is the acpnorm daemon: a gRPC service that turns the raw
// ACP tool-call traffic of coding agents into one provider-neutral record of
// every shell command.
//
// Usage:
//
//	acpnormd [serve] [flags]        serve gRPC (default 127.0.0.1:50051)
//	acpnormd replay [flags] [FILE]  play a recorded ACP wire log through the service
//	acpnormd health [flags]         ask a running server's gRPC health service
//	acpnormd proxy [flags] -- AGENT [ARGS...]
//	                                run an ACP agent, relaying its stdio, and record its shell commands
//	acpnormd version                print the version, commit and Go version
//	acpnormd help [COMMAND]         list the commands and their flags
//
// Every serve flag can also be set by an environment variable, named in its
// help; a flag on the command line wins. 'acpnormd help' lists every flag.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed (or, for health, not SERVING)
	exitUsage = 2 // bad command line: unknown command or flag, bad value
)

// usageError is a mistake on the command line; it exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// command is one subcommand of acpnormd.
type command struct {
	name     string
	synopsis string // after "acpnormd "
	summary  string
	// flags returns the command's flag set, for help; nil if it has none.
	flags func() *flag.FlagSet
	run   func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "[serve] [flags]", "serve gRPC (the default command)",
			func() *flag.FlagSet { fs, _, _ := serveFlagSet(); return fs },
			func(args []string, _, _ io.Writer) error { return serve(args) }},
		{"replay", "replay [flags] [FILE]", "play a recording through the service and print each shell command",
			func() *flag.FlagSet { fs, _ := replayFlagSet(); return fs }, replayCmd},
		{"proxy", "proxy [flags] -- AGENT [ARGS...]", "run an ACP agent for a client, relaying its stdio untouched, and record every shell command",
			func() *flag.FlagSet { fs, _ := proxyFlagSet(); return fs }, proxyCmd},
		{"health", "health [flags]", "ask a running server's gRPC health service; exit 0 when SERVING",
			func() *flag.FlagSet { fs, _ := healthFlagSet(); return fs }, healthCmd},
		{"version", "version", "print the version, commit and Go version", nil,
			func(args []string, stdout, _ io.Writer) error {
				if len(args) > 0 {
					return usagef("version takes no arguments, got %q", args)
				}
				printVersion(stdout)
				return nil
			}},
		{"help", "help [COMMAND]", "list the commands and their flags, or one command's", nil, nil},
	}
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			name, args = "help", nil
		case a == "-version" || a == "--version":
			name, args = "version", args[1:]
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	c, ok := findCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "acpnormd: unknown command %q; the commands are %s (see 'acpnormd help')\n", name, commandNames())
		return exitUsage
	}
	var err error
	if c.name == "help" {
		err = help(args, stdout)
	} else {
		err = c.run(args, stdout, stderr)
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		// -h after a command: that command's help, on stdout.
		_ = help([]string{c.name}, stdout)
		return exitOK
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status) // proxy: the agent's status, already explained
	}
	fmt.Fprintf(stderr, "acpnormd %s: %v\n", c.name, err)
	var ue usageError
	if errors.As(err, &ue) {
		if c.name == "help" {
			fmt.Fprintln(stderr, "see 'acpnormd help'")
		} else {
			fmt.Fprintf(stderr, "see 'acpnormd help %s'\n", c.name)
		}
		return exitUsage
	}
	return exitFail
}

// parseFlags parses args with fs, keeping the flag package quiet: run
// prints help and errors itself. A bad flag is a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}

const intro = `acpnormd: ACP shell tool calls in, normalized ShellExec records out.

Exit status: 0 on success, 1 when a command fails (health: not SERVING or
not reachable; replay: the recording had frame errors), 2 for a bad command
line; proxy exits with the agent's status (128+N when signal N killed it,
127 when it was not found, 126 when it could not be run).

`

// help prints every command with its flags, or one command's when args
// names it.
func help(args []string, w io.Writer) error {
	cmds := commands()
	if len(args) > 1 {
		return usagef("help takes at most one COMMAND, got %q", args)
	}
	if len(args) == 1 {
		c, ok := findCommand(args[0])
		if !ok {
			return usagef("unknown command %q; the commands are %s", args[0], commandNames())
		}
		cmds = []command{c}
	} else {
		fmt.Fprint(w, intro)
		fmt.Fprintln(w, "Commands:")
		for _, c := range cmds {
			fmt.Fprintf(w, "  acpnormd %-22s %s\n", c.synopsis, c.summary)
		}
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "\nacpnormd %s\n  %s\n", c.synopsis, c.summary)
		if doc := commandDoc[c.name]; doc != "" {
			fmt.Fprintf(w, "\n%s", doc)
		}
		if c.flags == nil {
			continue
		}
		fs := c.flags()
		fmt.Fprintf(w, "\n%s flags:\n", c.name)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	return nil
}

// commandDoc is each command's longer description in help.
var commandDoc = map[string]string{
	"serve": `  Serves NormalizerService, the standard gRPC health service and server
  reflection until SIGTERM or SIGINT, then shuts down gracefully. Every flag
  has an environment variable (named in its help); a flag wins.
`,
	"replay": `  Plays a recorded ACP wire log (newline-delimited JSON) through the service
  and prints one row per shell command: its final state, outcome, exit code
  and the last lines of its output. Without FILE it plays an embedded real
  recording of claude-agent-acp running nine shell commands. Without --addr
  it starts the service in-process on a loopback port. Frame errors are
  printed to stderr and make the exit status 1 (--keep-going: 0).
`,
	"proxy": `  Starts AGENT with this environment and working directory and relays the
  client's stdin to it and its stdout back, byte for byte, its stderr
  through. Use it in a client's agent settings in place of the agent's own
  command. Beside the relay, never on its path, each JSON line is copied to
  a bounded queue and normalized: --out writes the record, --addr sends the
  frames to a running acpnormd, --wire writes a recording 'replay' reads.
  When normalization falls behind, lines are dropped from it (counted, said
  once on stderr), never from the relay; lines that are not JSON are relayed
  and skipped. SIGINT, SIGTERM and SIGHUP go to the agent; when the client
  closes stdin the agent's stdin is closed; the proxy exits with the agent's
  status. See docs/proxy.md.
`,
	"health": `  Asks a running acpnormd's standard gRPC health service (grpc.health.v1) and
  prints one line. Exit status 0 when SERVING, 1 when not serving or not
  reachable. For scripts and container probes (Kubernetes can also probe
  the same service natively: grpc: {port: 50051}).
`,
	"version": `  Prints the version, the commit and the Go version it was built with (from
  the build info; a release build sets them with
  -ldflags "-X main.version=V -X main.commit=C").
`,
}
