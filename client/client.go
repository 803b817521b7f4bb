// Package client is a resilient Go client of acpnormd: a Session takes the
// JSON-RPC messages of one ACP session and hands out the folded state of
// each of its shell tool calls, whatever happens to the servers between.
//
// A Session numbers its requests (frames, TurnEnded, SessionClosed) 1, 2,
// 3, ... and streams them with StreamOptions.skip_applied_sequences, so that
// anything sent again is applied once. When a stream breaks (a replica
// died, a server shuts down, the network failed) or a request is refused
// (a FrameError UNAVAILABLE: not applied, or applied or not with the
// outcome unknown, which a resend with skipped sequences settles), the
// Session waits (exponential backoff with jitter, bounded by WithBackoff),
// moves to the next address, and sends again every request it has no
// answer for. The first frame on
// each new stream states what the Session holds (AcpFrame.held_revisions),
// so a server whose store lost commits answers DATA_LOSS instead of
// restarting a call; the Session then rebuilds the session by sending its
// frames again from the first, and ends with the same finals. Revisions
// are folded with package fold; one received twice is folded once.
//
// To rebuild, a Session keeps the requests of an open session, within
// the bounds WithSessionLimits sets (10 000 requests and 64 MiB by
// default). A request that would pass them makes it drop its oldest
// answered requests first (Stats().Dropped counts them): the session goes
// on, but can no longer be rebuilt, and a later loss ends the Session with
// an error wrapping ErrCannotRebuild. Send fails with an error wrapping
// ErrSessionFull only when the requests not answered yet fill the bounds.
// Close releases what is kept.
//
//	c, err := client.New([]string{"10.0.0.1:50051", "10.0.0.2:50051"})
//	s := c.Session("s1", client.OnRevision(func(x *acpnormv1.ShellExec) { ... }))
//	err = s.Send(ctx, acpnormv1.Direction_DIRECTION_AGENT_TO_CLIENT, line)
//	...
//	err = s.Close(ctx)    // SessionClosed, and every answer received
//	for _, call := range s.Calls() { fmt.Println(call.GetCommand(), call.GetOutcome()) }
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// Client holds the connections to one acpnormd fleet. It is safe for
// concurrent use; its Sessions are independent of each other.
type Client struct {
	cfg   config
	conns []*grpc.ClientConn
	ctx   context.Context // ends with Close
	stop  context.CancelFunc
}

type config struct {
	tls              *tls.Config
	token            string
	dial             []grpc.DialOption
	minWait, maxWait time.Duration
	maxFrames        int
	maxBytes         int
	maxRebuilds      int
}

// Option configures a Client.
type Option func(*config)

// WithTLS connects with TLS (mutual TLS when cfg has Certificates). The
// default is plaintext, for loopback.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithToken sends `authorization: Bearer <token>` on every stream. Without
// WithTLS it goes in the clear: use it so only on loopback.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithDialOptions adds gRPC dial options, after (and so overriding) the
// Client's own: for example a service config that balances one name over
// several servers, or other keepalive parameters than the default pings
// (every 10s without a read, 5s for the answer).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dial = append(c.dial, opts...) }
}

// WithBackoff sets the wait before reconnecting: min after the first
// failure, doubling with each failure in a row up to max, each wait drawn
// at random between half and all of it. The defaults are 50ms and 2s. It
// bounds gRPC's own wait before connecting again to an address too (its
// default grows to 2 minutes), so a server restarted on the same address
// is used again within it.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) { c.minWait, c.maxWait = min, max }
}

// WithSessionLimits bounds what each open Session keeps to rebuild its
// session: requests (frames, TurnEnded, SessionClosed), and bytes of their
// messages. A request that would pass either makes the Session drop its
// oldest answered requests first, after which a loss cannot be rebuilt
// (ErrCannotRebuild); Send fails with an error wrapping ErrSessionFull
// when the requests not answered yet fill it. The Session also ends its
// stream once half of either is unanswered, so that the server's trailer
// answers frames that made no revision.
func WithSessionLimits(requests, bytes int) Option {
	return func(c *config) { c.maxFrames, c.maxBytes = requests, bytes }
}

// ErrSessionFull says a Session holds as many requests, or bytes, not
// answered yet as WithSessionLimits allows; the request was not taken.
var ErrSessionFull = errors.New("acpnorm client: session is at its bound")

// ErrCannotRebuild says the server lost the session (DATA_LOSS) after the
// Session had dropped its first requests to stay within WithSessionLimits,
// so it could not send them again to rebuild it: the Session gave up. What
// it folded before stays readable.
var ErrCannotRebuild = errors.New("acpnorm client: the server lost the session, and it cannot be rebuilt")

// ErrClosed says the Client or Session was closed.
var ErrClosed = errors.New("acpnorm client: closed")

// ErrInvalid says a Session's id, dialect or working directory cannot go
// in a request (it is not valid UTF-8): every Send of it fails so.
var ErrInvalid = errors.New("acpnorm client: invalid session")

// connectTimeout bounds one connection attempt (gRPC's MinConnectTimeout).
const connectTimeout = 5 * time.Second

// New makes a Client of the acpnormd servers at addrs (gRPC targets:
// "host:port", or one name that resolves to several, "dns:///name:port").
// It connects lazily: an address that is down is found out, and skipped,
// when a Session uses it.
func New(addrs []string, opts ...Option) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("acpnorm client: no address")
	}
	cfg := config{minWait: 50 * time.Millisecond, maxWait: 2 * time.Second, maxFrames: 10000, maxBytes: 64 << 20, maxRebuilds: 8}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.minWait <= 0 || cfg.maxWait < cfg.minWait {
		return nil, fmt.Errorf("acpnorm client: backoff %v to %v: want 0 < min <= max", cfg.minWait, cfg.maxWait)
	}
	if cfg.maxFrames <= 0 || cfg.maxBytes <= 0 {
		return nil, fmt.Errorf("acpnorm client: session limits %d requests, %d bytes: want both above 0", cfg.maxFrames, cfg.maxBytes)
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if cfg.tls != nil {
		dial = []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg.tls))}
	}
	if cfg.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: cfg.token, secure: cfg.tls != nil}))
	}
	// A server that stops answering (paused, or its host gone) without
	// closing the connection is found out by pings: after 10s without a
	// read (acpnormd tolerates pings that often), 5s for the answer.
	dial = append(dial, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second}))
	// gRPC tries a connection that failed again after its own backoff (1 s
	// growing to 2 min by default), which would keep a server restarted on
	// the same address unused long after the Session's own wait: bounded
	// by the same backoff instead; a connection attempt may take 5 s.
	dial = append(dial, grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: cfg.minWait, Multiplier: 2, Jitter: 0.5, MaxDelay: cfg.maxWait},
		MinConnectTimeout: connectTimeout,
	}))
	dial = append(dial, cfg.dial...)
	c := &Client{cfg: cfg}
	for _, a := range addrs {
		conn, err := grpc.NewClient(a, dial...)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("acpnorm client: %s: %w", a, err)
		}
		c.conns = append(c.conns, conn)
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	return c, nil
}

// Close ends every Session's streams and closes the connections. Sessions
// not closed before lose what they had not sent.
func (c *Client) Close() error {
	c.stop()
	return c.closeConns()
}

func (c *Client) closeConns() error {
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}

// wait sleeps the backoff of the n-th failure in a row (n from 0), or
// until ctx ends.
func (c *Client) wait(ctx context.Context, n int) error {
	d := c.cfg.minWait
	for i := 0; i < n && d < c.cfg.maxWait; i++ {
		d *= 2
	}
	d = min(d, c.cfg.maxWait)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bearer sends the token with every call; with TLS, gRPC refuses to send
// it over a connection without transport security.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// stub returns the service client of the i-th address.
func (c *Client) stub(i int) pb.NormalizerServiceClient {
	return pb.NewNormalizerServiceClient(c.conns[i%len(c.conns)])
}

// target names the i-th address.
func (c *Client) target(i int) string { return c.conns[i%len(c.conns)].Target() }
