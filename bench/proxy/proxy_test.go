// Package proxy benchmarks `acpnormd proxy` against a direct pipe to the
// same agent, in the same run: a synthetic agent (echoagent) writes back
// each line it reads, and the client measures each line's round trip and
// the throughput of a stream of lines, once straight to the agent and once
// through `acpnormd proxy --out FILE`, which normalizes every line in its
// process beside the relay.
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/proxy/
//
// Each latency op is one round trip direct and one through each proxy,
// interleaved, so all see the same machine; the figures are the direct
// p50/p99 and what each proxy adds to them. Each throughput op is one line
// each way through each: the b.N lines go in 10 rounds, each round a stream
// through every pipeline in turn, so that a change in the machine's load
// falls on all alike; before each stream the run waits until none of its
// processes uses the CPU (an engine still working through its queue would
// otherwise slow the next pipeline's stream, and the ratios with it; what a
// pipeline still does after its own last echo is charged to none); the
// ratios are proxied/direct MB/s over all rounds. "relay" is the proxy with only
// --wire (the relay and the copy of each read, no engine), "proxy" the
// proxy with --out (the engine in its process), "remote" the proxy with
// --addr and --out (the engine in an acpnormd process on loopback).
//
// ACPNORMD_BEFORE=/path/to/acpnormd adds that build's relay (--wire) to
// the same ops, as "before": a change to the relay measured before and
// after in one run. The two stream side by side, in turns (order), since
// the pipeline that streams right after the engine's ones was the slower
// one whatever its build.
//
//	go build -o /tmp/acpnormd-main ./cmd/acpnormd   # on the commit before
//	ACPNORMD_BEFORE=/tmp/acpnormd-main go test -run '^$' -bench . -benchtime 200x ./bench/proxy/
package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var bin struct {
	acpnormd, agent, dir, before string
	server                       *exec.Cmd // the acpnormd of --addr, once started
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxybench")
	if err != nil {
		panic(err)
	}
	bin.dir = dir
	bin.before = os.Getenv("ACPNORMD_BEFORE")
	bin.acpnormd, bin.agent = filepath.Join(dir, "acpnormd"), filepath.Join(dir, "echoagent")
	for _, b := range [][2]string{{bin.acpnormd, "../../cmd/acpnormd"}, {bin.agent, "./echoagent"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b[1], err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	if bin.server != nil {
		bin.server.Process.Kill()
		bin.server.Wait()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// pipeline is an agent process as a client holds it.
type pipeline struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

func start(b *testing.B, argv ...string) *pipeline {
	b.Helper()
	p := &pipeline{cmd: exec.Command(argv[0], argv[1:]...)}
	p.cmd.Stderr = &p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return p
}

func direct(b *testing.B) *pipeline { return start(b, bin.agent) }

// relayed runs the agent through the proxy with only --wire: the relay and
// the copy of each read, without the engine.
func relayed(b *testing.B) *pipeline {
	return start(b, bin.acpnormd, "proxy", "--wire", filepath.Join(bin.dir, "wire.ndjson"), "--", bin.agent)
}

// remoted runs it through the proxy sending to an acpnormd process on
// loopback (--addr), the engine out of the proxy's process.
func remoted(b *testing.B) *pipeline {
	runs++ // each run its own session: the server keeps a closed one's calls released
	return start(b, bin.acpnormd, "proxy", "--addr", serveAddr(b), "--session", fmt.Sprintf("bench-%d", runs),
		"--out", filepath.Join(bin.dir, "record-remote.ndjson"), "--", bin.agent)
}

var runs int

var server struct {
	once sync.Once
	addr string
	err  error
}

var servingRe = regexp.MustCompile(`msg=serving grpc=(\S+)`)

// serveAddr starts one acpnormd for the whole run (TestMain ends it).
func serveAddr(b *testing.B) string {
	server.once.Do(func() {
		cmd := exec.Command(bin.acpnormd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
		stderr, err := cmd.StderrPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			server.err = err
			return
		}
		bin.server = cmd
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRe.FindStringSubmatch(sc.Text()); m != nil {
				server.addr = m[1]
				go io.Copy(io.Discard, stderr)
				return
			}
		}
		server.err = fmt.Errorf("acpnormd ended before serving")
	})
	if server.err != nil {
		b.Fatal(server.err)
	}
	return server.addr
}

// pipelines are the ways each op goes: direct, relayed, proxied, remoted,
// then the relay of the build before when there is one.
func pipelines(b *testing.B) []*pipeline {
	ps := []*pipeline{direct(b), relayed(b), proxied(b), remoted(b)}
	if bin.before != "" {
		ps = append(ps, start(b, bin.before, "proxy", "--wire", filepath.Join(bin.dir, "wire-before.ndjson"), "--", bin.agent))
	}
	return ps
}

// proxied runs it through the proxy normalizing in its process (--out).
func proxied(b *testing.B) *pipeline {
	return start(b, bin.acpnormd, "proxy", "--out", filepath.Join(bin.dir, "record.ndjson"), "--", bin.agent)
}

// readLine reads one whole line, however long.
func (p *pipeline) readLine(b *testing.B) int {
	n := 0
	for {
		chunk, err := p.out.ReadSlice('\n')
		n += len(chunk)
		switch err {
		case nil:
			return n
		case bufio.ErrBufferFull:
			continue
		}
		b.Fatalf("reading the echo: %v (stderr: %s)", err, p.stderr.String())
	}
}

func (p *pipeline) roundTrip(b *testing.B, line []byte) time.Duration {
	t0 := time.Now()
	if _, err := p.in.Write(line); err != nil {
		b.Fatal(err)
	}
	if n := p.readLine(b); n != len(line) {
		b.Fatalf("echo of %d bytes came back as %d", len(line), n)
	}
	return time.Since(t0)
}

// stream writes n lines as fast as the pipe takes them while reading the
// echoes, and returns how long the last echo took to arrive.
func (p *pipeline) stream(b *testing.B, line []byte, n int) time.Duration {
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() {
		for range n {
			if _, err := p.in.Write(line); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		p.readLine(b)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// close ends the agent as a client does (stdin closed) and returns what
// the proxy said at exit.
func (p *pipeline) close(b *testing.B) string {
	p.in.Close()
	io.Copy(io.Discard, p.out)
	if err := p.cmd.Wait(); err != nil {
		b.Fatalf("%v: %v (stderr: %s)", p.cmd.Args, err, p.stderr.String())
	}
	return p.stderr.String()
}

var droppedRe = regexp.MustCompile(`(\d+) (?:lines|frames) \(\d+ bytes\) dropped from normalization`)

// dropped is how many lines the proxy said it dropped from normalization
// (behind, or past --buffer-bytes).
func dropped(stderr string) float64 {
	n := 0
	for _, m := range droppedRe.FindAllStringSubmatch(stderr, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return float64(n)
}

// frames are ACP lines of about size bytes: the tool_call of a shell
// command, then updates that each add size bytes of its output, so the
// engine reads them as a real agent's.
func frames(size int) (first, update []byte) {
	first = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"bash","kind":"execute","status":"in_progress","rawInput":{"command":"yes"}}}}` + "\n")
	head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","_meta":{"terminal_output_delta":{"terminal_id":"c1","data":"`
	tail := `"}}}}}` + "\n"
	pad := strings.Repeat("y\\n", max(1, (size-len(head)-len(tail))/3))
	return first, []byte(head + pad + tail)
}

func sizeName(size int) string {
	if size >= 1<<10 {
		return fmt.Sprintf("%dKiB", size>>10)
	}
	return fmt.Sprintf("%dB", size)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// order is the order in which throughput round r streams through the
// pipelines: the relay and the build before's side by side, in turns, so
// that neither of the two is always the one that follows the engine's
// pipelines.
func order(n, r int) []int {
	switch {
	case n <= 4:
		return []int{0, 1, 2, 3}[:n]
	case r%2 == 0:
		return []int{0, 1, 4, 2, 3}
	default:
		return []int{0, 4, 1, 2, 3}
	}
}

// settle waits, a second at most, until none of the run's processes (the
// pipelines' and the acpnormd of --addr) is using the CPU, so that the work
// one pipeline left behind (an engine working through its queue, a
// consumer through its backlog) does not fall on the next one's stream.
func settle(ps []*pipeline) {
	pids := []int{}
	for _, p := range ps {
		pids = append(pids, p.cmd.Process.Pid)
	}
	if bin.server != nil {
		pids = append(pids, bin.server.Process.Pid)
	}
	last := cpuTicks(pids)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		now := cpuTicks(pids)
		if now == last {
			return
		}
		last = now
	}
}

// cpuTicks is the CPU time the processes used so far, in clock ticks
// (/proc/PID/stat's utime and stime); 0 where there is no /proc.
func cpuTicks(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command's name, which is in parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			sum += u + s
		}
	}
	return sum
}

// streamRounds is how many rounds a throughput op's lines are split into.
const streamRounds = 10

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func BenchmarkProxy(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10} {
		first, update := frames(size)
		b.Run("size="+sizeName(size)+"/latency", func(b *testing.B) {
			ps := pipelines(b)
			lat := make([][]time.Duration, len(ps))
			for _, p := range ps {
				p.roundTrip(b, first)
			}
			b.SetBytes(int64(2 * len(update)))
			b.ResetTimer()
			for range b.N {
				for i, p := range ps {
					lat[i] = append(lat[i], p.roundTrip(b, update))
				}
			}
			b.StopTimer()
			said := make([]string, len(ps))
			for i, p := range ps {
				said[i] = p.close(b)
			}
			for _, q := range []struct {
				name string
				p    float64
			}{{"p50", 0.50}, {"p99", 0.99}} {
				base := percentile(lat[0], q.p)
				b.ReportMetric(us(base), "direct-"+q.name+"-µs")
				b.ReportMetric(us(percentile(lat[1], q.p)-base), "relay-added-"+q.name+"-µs")
				b.ReportMetric(us(percentile(lat[2], q.p)-base), "proxy-added-"+q.name+"-µs")
				b.ReportMetric(us(percentile(lat[3], q.p)-base), "remote-added-"+q.name+"-µs")
				if len(ps) > 4 {
					b.ReportMetric(us(percentile(lat[4], q.p)-base), "before-added-"+q.name+"-µs")
				}
			}
			b.ReportMetric(dropped(said[2]), "dropped-lines")
			b.ReportMetric(dropped(said[3]), "remote-dropped-lines")
		})
		b.Run("size="+sizeName(size)+"/throughput", func(b *testing.B) {
			ps := pipelines(b)
			for _, p := range ps {
				p.roundTrip(b, first)
			}
			b.SetBytes(int64(2 * len(update)))
			// The lines go in rounds, each through every pipeline in
			// turn, so that a change in the machine's load (it is shared)
			// falls on all of them alike; each stream starts on the run's
			// processes at rest (settle).
			took := make([]time.Duration, len(ps))
			rounds := min(streamRounds, b.N)
			b.ResetTimer()
			for r := range rounds {
				n := b.N/rounds + boolInt(r < b.N%rounds)
				for _, i := range order(len(ps), r) {
					settle(ps)
					took[i] += ps[i].stream(b, update, n)
				}
			}
			b.StopTimer()
			said := make([]string, len(ps))
			for i, p := range ps {
				said[i] = p.close(b)
			}
			mb := func(t time.Duration) float64 { return float64(b.N*len(update)) / t.Seconds() / 1e6 }
			b.ReportMetric(mb(took[0]), "direct-MB/s")
			b.ReportMetric(mb(took[1])/mb(took[0]), "relay/direct")
			b.ReportMetric(mb(took[2])/mb(took[0]), "proxy/direct")
			b.ReportMetric(mb(took[3])/mb(took[0]), "remote/direct")
			if len(ps) > 4 {
				b.ReportMetric(mb(took[4])/mb(took[0]), "before/direct")
				b.ReportMetric(dropped(said[4]), "before-dropped-lines")
			}
			// The relay's consumer may fall behind and drop lines from the
			// wire recording (counted): a faster relay that recorded less
			// would show here.
			b.ReportMetric(dropped(said[1]), "relay-dropped-lines")
			b.ReportMetric(dropped(said[2]), "dropped-lines")
			b.ReportMetric(dropped(said[3]), "remote-dropped-lines")
		})
	}
}
