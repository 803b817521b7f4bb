package client_test

import (
	"context"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/client"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldPath is a TCP path to a server that can hold what is sent on it:
// while held it reads nothing, so the bytes wait in the kernel's buffers,
// and once let go it delivers them, late, as a congested or partitioned
// network does. A connection whose client end closed is kept open towards
// the server for linger, so the server reads the late bytes before it
// sees the close.
type heldPath struct {
	lis    net.Listener
	to     string
	linger time.Duration

	mu     sync.Mutex
	held   bool
	free   *sync.Cond
	late   int64 // bytes that reached the server after the path was let go
	closed bool
	conns  []net.Conn
}

func newHeldPath(t *testing.T, to string, linger time.Duration) *heldPath {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &heldPath{lis: lis, to: to, linger: linger}
	p.free = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *heldPath) addr() string { return p.lis.Addr().String() }

func (p *heldPath) accept() {
	for {
		in, err := p.lis.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.to)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.copy(out, in, true)
		go p.copy(in, out, false)
	}
}

// copy relays src to dst, waiting before each read and each write while
// the path is held. toServer counts the bytes written late.
func (p *heldPath) copy(dst, src net.Conn, toServer bool) {
	buf := make([]byte, 32<<10)
	wasHeld := false
	for {
		wasHeld = p.wait() || wasHeld
		n, err := src.Read(buf)
		if n > 0 {
			wasHeld = p.wait() || wasHeld
			if _, werr := dst.Write(buf[:n]); werr != nil {
				if toServer {
					break
				}
				// The client is gone: what the server still sends is
				// read and dropped, and its end stays open until the
				// other direction closes it.
				io.Copy(io.Discard, src)
				break
			}
			if toServer && wasHeld {
				p.mu.Lock()
				p.late += int64(n)
				p.mu.Unlock()
			}
		}
		if err != nil {
			if err == io.EOF && toServer {
				time.Sleep(p.linger)
			}
			break
		}
	}
	dst.Close()
	src.Close()
}

// wait blocks while the path is held, and says whether it was.
func (p *heldPath) wait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := false
	for p.held && !p.closed {
		was = true
		p.free.Wait()
	}
	return was
}

func (p *heldPath) hold(on bool) {
	p.mu.Lock()
	p.held = on
	p.mu.Unlock()
	p.free.Broadcast()
}

func (p *heldPath) lateBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.late
}

func (p *heldPath) close() {
	p.lis.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.free.Broadcast()
}

// serveCounted is serve with its metrics in a registry of its own.
func serveCounted(t *testing.T, cfg service.Config) (*server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	return serveMeasured(t, cfg, service.DefaultServerOptions(), service.NewMetrics(reg)), reg
}

// counted is the sum of the series of the metric name in reg.
func counted(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// redisContents is every key of the database and its serialized value.
func redisContents(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	m := map[string]string{}
	for _, k := range keys {
		v, err := rdb.Dump(ctx, k).Result()
		require.NoError(t, err, "key %s", k)
		m[k] = v
	}
	return m
}

// Two servers share a real Redis. The session's path to A starts to hold
// its bytes (the connection stays up; nothing gets through): the client
// finds the stream dead by its keepalive and goes on on B, which applies
// what A never answered, and more. Then A's path lets the held bytes
// through: A reads frames that B already applied, against a session B has
// moved on. A applies none of them, whether the session is still open
// (then) or closed (after): the session's keys in Redis are what B left,
// byte for byte, and the client ends with one process's finals.
func TestSessionFramesHeldOnTheWayToAnOldServerAreNotAppliedAgain(t *testing.T) {
	for _, c := range []struct {
		name string
		// letGoAfterClose lets the held bytes through once the session
		// is closed, instead of while it runs.
		letGoAfterClose bool
	}{{"while the session runs", false}, {"after it is closed", true}} {
		t.Run(c.name, func(t *testing.T) {
			ls := lines(t)
			want := reference(t, ls)
			url := testredis.Start(t)
			open := func() *redisstore.Store {
				st, err := redisstore.Open(url)
				require.NoError(t, err)
				t.Cleanup(func() { st.Close() })
				return st
			}
			cfg := service.DefaultConfig()
			cfg.Store = open()
			a, regA := serveCounted(t, cfg)
			b := serve(t, open())
			path := newHeldPath(t, a.addr, 2*time.Second)
			opts, err := redis.ParseURL(url)
			require.NoError(t, err)
			rdb := redis.NewClient(opts)
			defer rdb.Close()

			cl, err := client.New([]string{path.addr(), b.addr}, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond))
			require.NoError(t, err)
			defer cl.Close()
			revs := &revisions{t: t}
			s := cl.Session("s1", client.OnRevision(revs.on))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			half := len(ls) / 2
			for _, l := range ls[:half] {
				require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
			}
			require.NoError(t, s.Flush(ctx))
			require.Zero(t, s.Stats().Reconnects, "the first half went to A alone")

			path.hold(true)
			// Frames sent now wait on A's path; the client moves to B
			// once its keepalive finds the stream dead, and sends them
			// there again.
			rest, last := ls[half:len(ls)-1], ls[len(ls)-1]
			for _, l := range rest[:len(rest)/2] {
				require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
			}
			require.NoError(t, s.Flush(ctx))
			require.GreaterOrEqual(t, s.Stats().Reconnects, 1, "the session moved to B")
			for _, l := range rest[len(rest)/2:] {
				require.NoError(t, s.Send(ctx, l.Dir, l.Msg))
			}
			require.NoError(t, s.Send(ctx, last.Dir, last.Msg))
			require.NoError(t, s.Flush(ctx))
			if c.letGoAfterClose {
				require.NoError(t, s.Close(ctx))
			}

			before := redisContents(t, rdb)
			require.NotEmpty(t, before)
			framesA := counted(t, regA, "acpnorm_frames_received_total")
			errorsA := counted(t, regA, "acpnorm_frame_errors_total")
			path.hold(false)
			// A reads the late frames before it sees the client's close.
			require.Eventually(t, func() bool {
				return counted(t, regA, "acpnorm_frames_received_total") > framesA
			}, 10*time.Second, 10*time.Millisecond, "A read the frames held on its path")
			time.Sleep(3 * time.Second)
			after := redisContents(t, rdb)
			assert.Equal(t, before, after, "A applied nothing of what it got late")
			// A answered them (with errors: B had applied them), it did
			// not pass over them in silence.
			assert.Greater(t, counted(t, regA, "acpnorm_frame_errors_total"), errorsA, "A refused the late requests")
			t.Logf("A read %v frames late and answered %v errors",
				counted(t, regA, "acpnorm_frames_received_total")-framesA,
				counted(t, regA, "acpnorm_frame_errors_total")-errorsA)

			if !c.letGoAfterClose {
				require.NoError(t, s.Close(ctx))
			}
			t.Logf("%+v, %d bytes reached A late", s.Stats(), path.lateBytes())
			sameFinals(t, want, s)
			assert.Empty(t, s.FrameErrors())
			assert.NoError(t, s.Err())
		})
	}
}
