package test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// idStream is one identity's Normalize stream to one replica of the real
// binary; each frame the tests send is answered by exactly one response.
type idStream struct {
	t  *testing.T
	st pb.NormalizerService_NormalizeClient
}

func openAs(t *testing.T, d *daemon, token string) *idStream {
	t.Helper()
	conn, err := grpc.NewClient(d.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait)
	t.Cleanup(cancel)
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	st, err := pb.NewNormalizerServiceClient(conn).Normalize(ctx)
	require.NoError(t, err)
	return &idStream{t: t, st: st}
}

// ask sends one frame and returns its answer, or the error that ended the
// stream.
func (s *idStream) ask(sid string, seq uint64, msg string) (*pb.NormalizeResponse, error) {
	s.t.Helper()
	require.NoError(s.t, s.st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: seq, Message: []byte(msg)}}}))
	return s.st.Recv()
}

func (s *idStream) exec(sid string, seq uint64, msg string) *pb.ShellExec {
	s.t.Helper()
	r, err := s.ask(sid, seq, msg)
	require.NoError(s.t, err)
	require.NotNil(s.t, r.GetShellExec(), "answer %v", r)
	return r.GetShellExec()
}

func idUpdate(u string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`
}

func idOpen(call, cmd string) string {
	return idUpdate(`{"sessionUpdate":"tool_call","toolCallId":"` + call + `","kind":"execute","title":"` + cmd + `","status":"in_progress","rawInput":{"command":"` + cmd + `"}}`)
}

func idDelta(call, data string) string {
	return idUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"` + call + `","_meta":{"terminal_output":{"terminal_id":"` + call + `","data":"` + data + `"}}}`)
}

func rewrite(t *testing.T, path, content string, n int) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	later := time.Now().Add(time.Duration(n) * time.Minute)
	require.NoError(t, os.Chtimes(path, later, later))
}

// The scenario on the real binary with two named tokens, and the
// same session id of two identities on one Redis shared by two replicas:
// the sessions stay two wherever they are served, B never sees A's text,
// and Redis holds each identity's session under its own hash tag. Then a
// token removed from the file is refused by both replicas: at once for a
// new call, at the next request (within a second) on a stream open with
// it.
func TestIdentitiesAcrossReplicasOnRedis(t *testing.T) {
	srv := testredis.StartServer(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	rewrite(t, tokens, "alice alice-token\nbob bob-token\n", 1)
	args := []string{"--store", srv.URL, "--auth-tokens-file", tokens, "--grace", "10m"}
	bin := buildDaemon(t)
	a, b := startDaemon(t, bin, args...), startDaemon(t, bin, args...)

	aliceOnA := openAs(t, a, "alice-token")
	aliceOnA.exec("S1", 1, idOpen("c1", "cat secrets.env"))
	x := aliceOnA.exec("S1", 2, idDelta("c1", "AWS_SECRET=hunter2\\n"))
	require.Equal(t, "AWS_SECRET=hunter2\n", x.GetOutput().GetText())

	bobOnB := openAs(t, b, "bob-token")
	bobOnA := openAs(t, a, "bob-token")
	// A stream's first revision of a call carries its texts whole: bob's
	// second stream gets his two deltas.
	for i, c := range []struct {
		s          *idStream
		data, text string
	}{{bobOnB, ".", "."}, {bobOnA, ",", ".,"}} {
		r, err := c.s.ask("S1", uint64(i+1), idDelta("c1", c.data))
		require.NoError(t, err)
		text, err := protojson.Marshal(r)
		require.NoError(t, err)
		assert.NotContains(t, string(text), "hunter2")
		assert.NotContains(t, string(text), "secrets.env")
		x := r.GetShellExec()
		require.NotNil(t, x, "answer %v", r)
		assert.Equal(t, uint32(i+1), x.GetRevision(), "bob's own call, on either replica")
		assert.Equal(t, c.text, x.GetOutput().GetText())
	}

	aliceOnB := openAs(t, b, "alice-token")
	x = aliceOnB.exec("S1", 3, idDelta("c1", "more"))
	assert.Equal(t, uint32(3), x.GetRevision(), "alice's call goes on on the other replica")
	assert.Equal(t, "cat secrets.env", x.GetCommand())
	assert.Equal(t, "AWS_SECRET=hunter2\nmore", x.GetOutput().GetText(), "alice's text, whole, without bob's")

	// In Redis, each identity's S1 is its own set of keys, and the
	// identity is inside the hash tag (a cluster keeps them in one slot).
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	keys, err := rc.Keys(context.Background(), "acpnorm:*").Result()
	require.NoError(t, err)
	tags := map[string]bool{}
	for _, k := range keys {
		if k == "acpnorm:readiness" {
			continue // the readiness check's key, of no session
		}
		open, end := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
		require.True(t, open >= 0 && end > open, "key %q has no hash tag", k)
		id, err := base64.RawURLEncoding.DecodeString(k[open+1 : end])
		require.NoError(t, err, "key %q", k)
		tags[string(id)] = true
	}
	assert.Equal(t, map[string]bool{"\xff\x05aliceS1": true, "\xff\x03bobS1": true}, tags)

	// Bob's token is removed from the file.
	rewrite(t, tokens, "alice alice-token\n", 2)
	for _, d := range []*daemon{a, b} {
		conn, _ := dial(t, d)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer bob-token")
		_, err := pb.NewNormalizerServiceClient(conn).ListDialects(ctx, &pb.ListDialectsRequest{})
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "a new call with bob's removed token")
	}
	time.Sleep(1100 * time.Millisecond) // a stream checks its token at most once a second
	_, err = bobOnB.ask("S1", 3, idDelta("c1", "after"))
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "bob's open stream at its next request")
	x = aliceOnB.exec("S1", 4, idDelta("c1", "alice goes on"))
	assert.Equal(t, uint32(4), x.GetRevision())
}

// On the real binary with named tokens, /metrics (which names the
// identities and counts each one's refusals) is served to the identity
// --metrics-identities names, and refused to a tenant's token.
func TestMetricsOnlyForTheMetricsIdentity(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	rewrite(t, tokens, "alice alice-token\nmetrics scrape-token\n", 1)
	d := startDaemon(t, buildDaemon(t), "--auth-tokens-file", tokens)
	for token, want := range map[string]int{"": 401, "alice-token": 403, "scrape-token": 200} {
		req, err := http.NewRequest("GET", "http://"+d.metrics+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "/metrics with %q", token)
		assert.Equal(t, want == 200, strings.Contains(string(body), "acpnorm_sessions"), "/metrics with %q shows the metrics", token)
	}
}
