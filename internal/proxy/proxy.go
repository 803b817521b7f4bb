// Package proxy sits on the stdio pipe between an ACP client and its agent:
// it relays both ways byte for byte and, beside the relay, copies each read
// to a Recorder that cuts it into lines and normalizes them. Nothing on the
// relay's path waits for normalization or looks at lines: the copy goes
// through a bounded queue, and a read that does not fit is dropped from
// normalization (the lines it touched are counted), never from the relay.
// On Linux, when the client's ends are pipes, the relay splices instead of
// copying and the copy is teed to a pipe the consumer reads
// (splice_linux.go), within the same bounds.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Config says what to run and where its ends go.
type Config struct {
	// Command is the agent and its arguments. It runs with the proxy's
	// environment and working directory.
	Command []string
	// Stdin is what the client writes; Stdout is where the agent's stdout
	// goes; Stderr gets the agent's stderr (an *os.File is handed to the
	// agent as it is, so its stderr is not copied at all; any other writer
	// is relayed to as stdout is, all of it, after the agent's exit too).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals are forwarded to the agent while it runs. One that comes
	// after the agent exited ends the Recorder's wait at once.
	Signals <-chan os.Signal
	// Recorder gets the copied lines; nil copies nothing.
	Recorder *Recorder
	// MaxFrame bounds one copied line; a longer one is relayed whole and
	// not normalized. QueueLines and QueueBytes bound the queue: the relay
	// queues each read whole (one line, many, or a piece of one), so
	// QueueLines counts reads.
	MaxFrame   int
	QueueLines int
	QueueBytes int64
	// Finish bounds how long the Recorder may take after the agent exited.
	Finish time.Duration
	// After the agent exited, a write to Stdout (or to a copied Stderr)
	// that makes no progress for Stall ends that relay (Result says so).
	// What reaches the agent's pipes after all it left there was read is
	// a child's of the agent that holds them: it is read until Drain after
	// the exit at most. Zero is the default.
	Stall, Drain time.Duration
	// StderrGone, when set, is called when the relay to a copied Stderr is
	// given up for a stall: nothing more should be written there.
	StderrGone func()
	// Say prints one notice (the proxy's stderr).
	Say func(msg string)
}

// Defaults of the bounds.
const (
	DefaultMaxFrame   = 8 << 20
	DefaultQueueLines = 4096
	DefaultQueueBytes = 64 << 20
	DefaultFinish     = 5 * time.Second
	DefaultStall      = 10 * time.Second
	DefaultDrain      = 10 * time.Second
)

// Result is how a run ended.
type Result struct {
	// Status is the agent's exit status, 128+N when a signal N killed it,
	// 127 when it could not be found and 126 when it could not be run (as
	// shells say).
	Status int
	// Drops is what normalization did not get.
	Drops Drops
	// ClientStalled and StderrStalled say that after the agent exited a
	// write to Stdout, or to the copied Stderr, made no progress for
	// Config.Stall, and that relay was given up.
	ClientStalled, StderrStalled bool
	// spliced is how many bytes went from pipe to pipe inside the kernel.
	spliced int64
}

// Run starts the agent, relays until it exits, and returns its status. The
// error is set only when the agent could not be started.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Command) == 0 {
		return Result{Status: 2}, errors.New("no agent command")
	}
	say := cfg.Say
	if say == nil {
		say = func(string) {}
	}
	start := time.Now()
	t := newTee(start, max(1, cfg.QueueLines), max(1, cfg.MaxFrame), max(1, cfg.QueueBytes), func() {
		say("normalization is behind: lines are dropped from normalization (never from the relay) and counted; the total is printed at exit")
	})

	inR, inW, err := os.Pipe()
	if err != nil {
		return Result{Status: 1}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return Result{Status: 1}, err
	}
	// The agent's pipes are the proxy's own: as big as the system lets a
	// user make them, so that the agent and the relay each wake up once per
	// big frame, not once per 64 KiB.
	growPipe(inW)
	growPipe(outR)
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Stdin, cmd.Stdout = inR, outW
	// A stderr that is not a file is relayed from a pipe of the proxy's
	// own, as stdout is: os/exec's copy would give up on what is left in
	// the pipe 2 s after the agent's exit (Cmd.WaitDelay), or wait for a
	// child of the agent that holds it for ever.
	var errR, errW *os.File
	switch e := cfg.Stderr.(type) {
	case nil:
	case *os.File:
		cmd.Stderr = e
	default:
		if errR, errW, err = os.Pipe(); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return Result{Status: 1}, err
		}
		cmd.Stderr = errW
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		status := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			status = 127
		}
		return Result{Status: status}, fmt.Errorf("starting %s: %w", cfg.Command[0], err)
	}

	var closeIn sync.Once
	closeAgentIn := func() { closeIn.Do(func() { inW.Close() }) }

	fromClient := t.feeder(pb.Direction_DIRECTION_CLIENT_TO_AGENT)
	fromAgent := t.feeder(pb.Direction_DIRECTION_AGENT_TO_CLIENT)
	t.closeWhenDone()

	// When the client's ends are pipes (the agent's are), the bytes move
	// inside the kernel and the consumer gets its copy from a pipe of its
	// own (splice_linux.go); otherwise each read is copied (relay).
	var sp *splicer
	clientIn, clientOut, pipes := spliceable(cfg.Stdin, cfg.Stdout)
	if pipes {
		sp = newSplicer(t, func(err error) {
			say(fmt.Sprintf("tee(2) failed (%v): the relay copies from here on", err))
		})
	}

	recCtx, recCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer recCancel(nil)
	recDone := make(chan struct{})
	go func() {
		defer close(recDone)
		if sp != nil {
			defer sp.close()
		}
		if cfg.Recorder != nil {
			cfg.Recorder.consume(recCtx, t)
			return
		}
		for _, ok := t.next(); ok; _, ok = t.next() {
		}
	}()

	// client -> agent. When the client closes its end, so does the agent's.
	go func() {
		defer closeAgentIn()
		if sp != nil {
			sp.relay(inW, clientIn, fromClient, nil, nil)
			return
		}
		defer fromClient.flush()
		relay(inW, cfg.Stdin, fromClient, nil, nil)
	}()
	// agent -> client. When the client stops reading, the agent's stdin is
	// closed; its output is still read, for normalization.
	agentOut := make(chan struct{})
	out := newDrain(outR)
	go func() {
		defer close(agentOut)
		if sp != nil {
			sp.relay(clientOut, outR, fromAgent, closeAgentIn, out)
			return
		}
		defer fromAgent.flush()
		relay(cfg.Stdout, out, fromAgent, closeAgentIn, out)
	}()
	// agent's stderr -> Stderr, when it is copied. A Stderr that fails
	// is let go; the pipe is still read, so the agent never waits on it.
	var errOut *drain
	agentErr := make(chan struct{})
	if errR != nil {
		errOut = newDrain(errR)
		go func() {
			defer close(agentErr)
			relay(cfg.Stderr, errOut, nil, func() {}, errOut)
		}()
	} else {
		close(agentErr)
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
wait:
	for {
		select {
		case sig := <-cfg.Signals:
			_ = cmd.Process.Signal(sig)
		case waitErr = <-exited:
			break wait
		}
	}
	// What the agent wrote is all relayed, however slow the client (or
	// the reader of a copied stderr); a pipe that stays empty (a child of
	// the agent holds it) ends its relay a grace after its last bytes, and
	// what a child writes after all the agent left there was read is
	// relayed until the drain limit. A consumer whose write makes no
	// progress for the stall bound is given up. A signal (the user stops
	// the proxy) lets the rest go.
	exit := time.Now()
	stall, limit := cfg.Stall, cfg.Drain
	if stall <= 0 {
		stall = DefaultStall
	}
	if limit <= 0 {
		limit = DefaultDrain
	}
	var res Result
	// The relays after the exit: stdout's, and stderr's when it is copied.
	// A done channel is nil once the relay ended or was given up.
	type pipeRelay struct {
		d    *drain
		done chan struct{}
		dst  io.Writer
		name string
	}
	outRelay := &pipeRelay{out, agentOut, cfg.Stdout, "stdout"}
	errRelay := &pipeRelay{errOut, agentErr, cfg.Stderr, "stderr"}
	relays := []*pipeRelay{outRelay}
	if errOut != nil {
		relays = append(relays, errRelay)
	} else {
		errRelay.done = nil
	}
	for _, r := range relays {
		if r.d.start(exit, limit) != nil {
			select {
			case <-r.done:
			case <-time.After(stdoutGrace):
				r.d.f.Close() // no deadlines: a child of the agent may hold it
			}
		}
	}
	check := time.NewTicker(min(stall/4, 250*time.Millisecond))
	defer check.Stop()
	var stopSig os.Signal
	for outRelay.done != nil || errRelay.done != nil {
		select {
		case <-outRelay.done:
			outRelay.done = nil
		case <-errRelay.done:
			errRelay.done = nil
		case sig := <-cfg.Signals:
			if stopSig == nil {
				stopSig = sig
				say(fmt.Sprintf("%v after the agent exited: its stdout and stderr are no longer read (what was not taken yet is dropped)", stopSig))
				for _, r := range relays {
					r.d.f.Close()
				}
			}
		case now := <-check.C:
			for _, r := range relays {
				if r.done == nil || !r.d.stalled(now, exit, stall) {
					continue
				}
				r.done = nil
				r.d.abandon(r.dst)
				if r == outRelay {
					res.ClientStalled = true
					fromAgent.flush()
					say(fmt.Sprintf("the client took nothing of its stdout for %v after the agent exited: what it had not taken is dropped", stall))
				} else {
					res.StderrStalled = true
					if cfg.StderrGone != nil {
						cfg.StderrGone()
					}
				}
			}
		}
	}
	for _, r := range relays {
		r.d.f.Close()
		if r.d.cut() && !(r == outRelay && res.ClientStalled) && !(r == errRelay && res.StderrStalled) {
			say(fmt.Sprintf("a child of the agent still held its %s %v after the agent exited: it is read no more (what the child writes there is not relayed)", r.name, limit))
		}
	}
	closeAgentIn()
	fromClient.flush() // the client's side may never close
	if stopSig != nil {
		recCancel(fmt.Errorf("%v after the agent exited", stopSig))
	}

	finish := cfg.Finish
	if finish <= 0 {
		finish = DefaultFinish
	}
	timer := time.AfterFunc(finish, func() {
		recCancel(fmt.Errorf("the agent exited %v ago", finish))
	})
	defer timer.Stop()
	select {
	case <-recDone:
	case <-ctx.Done():
		recCancel(context.Cause(ctx))
		<-recDone
	case sig := <-cfg.Signals:
		recCancel(fmt.Errorf("%v after the agent exited", sig))
		<-recDone
	}
	res.Status, res.Drops, res.spliced = exitStatus(cmd.ProcessState, waitErr), t.dropped(), sp.spliced()
	return res, nil
}

// relayBuf is the most one read of the relay takes: as much as a pipe the
// proxy enlarged holds, so that a big frame crosses in one read and one
// write.
const relayBuf = pipeSize

// relay copies src to dst as it comes, each read written on at once. The
// feeder, when set, queues a copy of each read just before dst gets it (a
// copy, never a wait), so that a line is queued before anything it causes
// on the other side: the wire keeps cause before effect. When dst fails,
// onDstFail is called once and src is still read to its end. d, when set,
// is src's drain: the writes to dst go through it (drain.write).
func relay(dst io.Writer, src io.Reader, f *feeder, onDstFail func(), d *drain) {
	buf := make([]byte, relayBuf)
	dead := false
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if f != nil {
				f.feed(buf[:n])
			}
			if !dead {
				if werr := d.write(dst, buf[:n]); werr != nil {
					if onDstFail == nil {
						return
					}
					dead = true
					onDstFail()
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
