package test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
)

// A hostile client of the resume and loss-detection features
// (held_revisions, held_sequence, skip_applied_sequences), against the
// real binary on loopback with the memory store and with a real
// redis-server, as two identities (named tokens).

func hostileDaemon(t *testing.T, storeURL string) *daemon {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	rewrite(t, tokens, "alice alice-token\nbob bob-token\n", 1)
	args := []string{"--auth-tokens-file", tokens, "--grace", "10m"}
	if storeURL != "" {
		args = append(args, "--store", storeURL)
	}
	return startDaemon(t, buildDaemon(t), args...)
}

// hostileStores are the stores the probes run against: the process's
// memory, and a real redis-server.
func hostileStores(t *testing.T) []struct{ name, url string } {
	srv := testredis.StartServer(t)
	return []struct{ name, url string }{{"memory", ""}, {"redis", srv.URL}}
}

func (s *idStream) skipApplied() {
	s.t.Helper()
	require.NoError(s.t, s.st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}))
}

// claim sends one frame with what the client says it holds, and returns
// the one answer it expects.
func (s *idStream) claim(sid string, seq uint64, msg string, held map[string]uint32, heldSeq uint64) *pb.NormalizeResponse {
	s.t.Helper()
	require.NoError(s.t, s.st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
		SessionId: sid, Sequence: seq, Message: []byte(msg), HeldRevisions: held, HeldSequence: heldSeq}}}))
	return s.answer()
}

// answer is the next response, within 20 seconds.
func (s *idStream) answer() *pb.NormalizeResponse {
	s.t.Helper()
	type got struct {
		r   *pb.NormalizeResponse
		err error
	}
	c := make(chan got, 1)
	go func() {
		r, err := s.st.Recv()
		c <- got{r, err}
	}()
	select {
	case g := <-c:
		require.NoError(s.t, g.err, "the stream goes on")
		return g.r
	case <-time.After(20 * time.Second):
		s.t.Fatal("no answer within 20s")
	}
	return nil
}

func idFinish(call string) string {
	return idUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"` + call + `","status":"completed","_meta":{"terminal_exit":{"terminal_id":"` + call + `","exit_code":0,"signal":null}}}`)
}

func manyCalls(n, idBytes int, rev uint32) map[string]uint32 {
	m := make(map[string]uint32, n)
	for i := range n {
		id := fmt.Sprintf("ghost-%d-", i)
		m[id+strings.Repeat("\x01", max(0, idBytes-len(id)))] = rev
	}
	return m
}

// Each probe is a frame (sequence 3, the call's second delta) of a
// session of its own that has applied two (the call's opening and a
// delta), carrying a hostile claim. It is applied or refused as the case
// says, with a message bounded in size and naming the problem. Then the
// stream goes on: a frame of another session applies, the refused frame
// sent again without the claim applies, and the call ends with every
// byte it was sent, its revisions going 1, 2, 3, 4.
func TestHostileClaimsOnTheBinary(t *testing.T) {
	cases := []struct {
		name     string
		held     map[string]uint32
		heldSeq  uint64
		code     codes.Code // OK: applied
		holds3   bool       // the claim says the client holds revision 3: sent again, it is not sent
		contains []string
		maxLen   int
	}{
		// A claim may name more calls than a session can have (a long
		// session's client names the calls it released too): the first
		// 2 × --max-calls-per-session are checked (the session's own first,
		// then by id), and the rest counted.
		{name: "more calls than a session can have", held: manyCalls(2*1024+1, 8, 1), code: codes.DataLoss,
			contains: []string{"was handed on, the session has none", "and 2032 more calls", "1 more calls the claim names were not checked", "--max-calls-per-session", "not applied"}, maxLen: 4096},
		// Up to 64 × --max-calls-per-session (65536 at the defaults).
		{name: "the most calls a claim may name", held: manyCalls(65536, 8, 1), code: codes.DataLoss,
			contains: []string{"was handed on, the session has none", "63488 more calls the claim names were not checked", "--max-calls-per-session", "not applied"}, maxLen: 4096},
		// More is refused before it is decoded: the frame is not applied.
		{name: "half a million calls (7 MB)", held: manyCalls(500_000, 8, 1), code: codes.InvalidArgument,
			contains: []string{`frame 3 of session "probe-`, "held_revisions names 500000 calls", "at most 65536", "--max-calls-per-session", "not applied"}, maxLen: 1024},
		{name: "the most calls, long ids, none of them there", held: manyCalls(2*1024, 256, 1), code: codes.DataLoss,
			contains: []string{"was handed on, the session has none", "and 2032 more calls"}, maxLen: 20 << 10}, // 16 ids named, each quoted (4 bytes a control byte)
		{name: "an id of a megabyte", held: map[string]uint32{strings.Repeat("x", 1<<20): 9}, code: codes.OK},
		{name: "an empty id", held: map[string]uint32{"": 7}, code: codes.DataLoss,
			contains: []string{`call "": revision 7 was handed on, the session has none`}, maxLen: 1024},
		{name: "revision 0 states nothing", held: map[string]uint32{"c1": 0, "ghost": 0}, code: codes.OK},
		{name: "the largest revision", held: map[string]uint32{"ghost": math.MaxUint32}, code: codes.InvalidArgument,
			contains: []string{`call "ghost"`, "4294967295", "at most 2147483648"}, maxLen: 1024},
		{name: "less than the call has", held: map[string]uint32{"c1": 1}, code: codes.OK},
		{name: "what the call has", held: map[string]uint32{"c1": 2}, code: codes.OK},
		{name: "more than the call has", held: map[string]uint32{"c1": 3}, code: codes.DataLoss, holds3: true,
			contains: []string{`call "c1": revision 3 was handed on, the session has revision 2`}, maxLen: 1024},
		{name: "held_sequence as applied", heldSeq: 2, code: codes.OK},
		{name: "held_sequence beyond what was sent", heldSeq: 1000, code: codes.DataLoss,
			contains: []string{"sequence 1000 was answered, the session has applied sequences up to 2"}, maxLen: 1024},
		{name: "held_sequence the largest (a negative int64)", heldSeq: math.MaxUint64, code: codes.DataLoss,
			contains: []string{"sequence 18446744073709551615 was answered"}, maxLen: 1024},
	}
	for _, store := range hostileStores(t) {
		t.Run(store.name, func(t *testing.T) {
			d := hostileDaemon(t, store.url)
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					st := openAs(t, d, "alice-token")
					st.skipApplied()
					sid := fmt.Sprintf("probe-%d", i)
					require.EqualValues(t, 1, st.claim(sid, 1, idOpen("c1", "make"), nil, 0).GetShellExec().GetRevision())
					require.EqualValues(t, 2, st.claim(sid, 2, idDelta("c1", "one "), nil, 0).GetShellExec().GetRevision())

					r := st.claim(sid, 3, idDelta("c1", "two "), c.held, c.heldSeq)
					if c.code != codes.OK {
						fe := r.GetFrameError()
						require.NotNil(t, fe, "want %v, got %v", c.code, r)
						assert.EqualValues(t, c.code, fe.GetCode(), "%s", fe.GetMessage())
						assert.EqualValues(t, 3, fe.GetSequence())
						for _, s := range c.contains {
							assert.Contains(t, fe.GetMessage(), s)
						}
						assert.LessOrEqual(t, len(fe.GetMessage()), c.maxLen, "the message is bounded")
						// Another session on the same stream goes on.
						assert.EqualValues(t, 1, st.claim(sid+"-other", 1, idOpen("c1", "ls"), nil, 0).GetShellExec().GetRevision())
						// Sent again without the claim, the frame applies
						// (revision 3, unless the client said it holds it).
						if c.holds3 {
							require.NoError(t, st.st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Sequence: 3, Message: []byte(idDelta("c1", "two "))}}}))
						} else {
							r = st.claim(sid, 3, idDelta("c1", "two "), nil, 0)
						}
					}
					if !c.holds3 {
						x := r.GetShellExec()
						require.NotNil(t, x, "answer %v", r)
						assert.EqualValues(t, 3, x.GetRevision())
						assert.Equal(t, "two ", x.GetOutput().GetText())
					}
					x := st.claim(sid, 4, idFinish("c1"), nil, 0).GetShellExec()
					require.NotNil(t, x)
					assert.EqualValues(t, 4, x.GetRevision())
					assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
					assert.Equal(t, "one two ", x.GetOutput().GetText(), "nothing accepted is lost")
				})
			}
		})
	}
}

// Bob states, on the session id alice uses and with her call ids, that
// he holds revisions and sequences of it. Each is answered from bob's own
// session (he has none), and the message names only what bob sent: not
// alice's command, output, revisions or sequences. Alice's session is
// untouched: her stream goes on, and she states what she holds on a new
// stream without a loss.
func TestHostileClaimsOnAnotherIdentitysSession(t *testing.T) {
	for _, store := range hostileStores(t) {
		t.Run(store.name, func(t *testing.T) {
			d := hostileDaemon(t, store.url)
			alice := openAs(t, d, "alice-token")
			alice.skipApplied()
			const sessions = 4
			for i := range sessions {
				sid := fmt.Sprintf("S%d", i)
				alice.claim(sid, 1, idOpen("c1", "cat secrets.env"), nil, 0)
				alice.claim(sid, 2, idDelta("c1", "AWS_SECRET=hunter2 "), nil, 0)
			}

			bob := openAs(t, d, "bob-token")
			bob.skipApplied()
			for i, c := range []struct {
				name     string
				held     map[string]uint32
				heldSeq  uint64
				contains string
			}{
				{"alice's revision of her call", map[string]uint32{"c1": 2}, 0, `call "c1": revision 2 was handed on, the session has none`},
				{"less than alice has", map[string]uint32{"c1": 1}, 0, `call "c1": revision 1 was handed on, the session has none`},
				{"alice's sequence", nil, 2, "sequence 2 was answered, the session has no sequence"},
				{"beyond alice's", map[string]uint32{"c1": 3}, 3, `call "c1": revision 3 was handed on, the session has none`},
			} {
				i := i
				t.Run(c.name, func(t *testing.T) {
					sid := fmt.Sprintf("S%d", i)
					r := bob.claim(sid, 3, idDelta("c1", "bob "), c.held, c.heldSeq)
					text, err := protojson.Marshal(r)
					require.NoError(t, err)
					for _, secret := range []string{"hunter2", "secrets.env", "the session has revision", "applied sequences up to"} {
						assert.NotContains(t, string(text), secret, "bob learns nothing of alice's session")
					}
					fe := r.GetFrameError()
					require.NotNil(t, fe, "answer %v", r)
					assert.EqualValues(t, codes.DataLoss, fe.GetCode())
					assert.Contains(t, fe.GetMessage(), c.contains)
					// Bob's stream goes on, with a session of his own.
					x := bob.claim(fmt.Sprintf("bob-%d", i), 1, idOpen("c9", "echo bob"), nil, 0).GetShellExec()
					require.NotNil(t, x)
					assert.Equal(t, "echo bob", x.GetCommand())
				})
			}

			again := openAs(t, d, "alice-token")
			again.skipApplied()
			for i := range sessions {
				sid := fmt.Sprintf("S%d", i)
				x := alice.claim(sid, 3, idDelta("c1", "more"), nil, 0).GetShellExec()
				require.NotNil(t, x)
				assert.EqualValues(t, 3, x.GetRevision(), "alice's call goes on")
				assert.Equal(t, "more", x.GetOutput().GetText())
				x = again.claim(sid, 4, idFinish("c1"), map[string]uint32{"c1": 3}, 3).GetShellExec()
				require.NotNil(t, x, "alice states what she holds on a new stream: no loss")
				assert.EqualValues(t, 4, x.GetRevision())
				assert.Equal(t, "cat secrets.env", x.GetCommand())
				assert.Equal(t, "AWS_SECRET=hunter2 more", x.GetOutput().GetText(), "her text whole, without bob's")
			}
		})
	}
}

// A hostile client numbers its requests badly on a stream with
// skip_applied_sequences: gaps, going back, the same twice, 0 (never
// skipped), the largest uint64 (after which every numbered request of
// the session is skipped). Each is answered as the contract says,
// ALREADY_EXISTS naming the sequences when not applied, and what was
// applied stays: the call ends with exactly the text of the frames
// applied.
func TestHostileSequencesOnTheBinary(t *testing.T) {
	type step struct {
		seq      uint64
		msg      string
		fresh    bool       // on a new stream
		rev      uint32     // applied (or answered again): the revision
		code     codes.Code // else refused with this code
		contains string
	}
	for _, store := range hostileStores(t) {
		t.Run(store.name, func(t *testing.T) {
			d := hostileDaemon(t, store.url)
			kept := store.url != "" // a store keeps answers: a frame sent again is answered with them
			dup := step{seq: 5, msg: idDelta("c1", "a"), fresh: true, code: codes.AlreadyExists, contains: "frame 5 of session \"seq\" was applied before (the session has applied sequences up to 5)"}
			if kept {
				dup = step{seq: 5, msg: idDelta("c1", "a"), fresh: true, rev: 2}
			}
			steps := []step{
				{seq: 1, msg: idOpen("c1", "make"), rev: 1},
				{seq: 5, msg: idDelta("c1", "a"), rev: 2}, // a gap
				{seq: 3, msg: idDelta("c1", "x"), code: codes.AlreadyExists, contains: "frame 3 of session \"seq\" was applied before (the session has applied sequences up to 5)"},
				dup,
				{seq: 0, msg: idDelta("c1", "b"), rev: 3},
				{seq: 0, msg: idDelta("c1", "c"), rev: 4},
				{seq: math.MaxUint64, msg: idDelta("c1", "d"), rev: 5},
				{seq: 6, msg: idDelta("c1", "e"), code: codes.AlreadyExists, contains: "applied sequences up to 18446744073709551615"},
			}
			st := openAs(t, d, "alice-token")
			st.skipApplied()
			for _, s := range steps {
				on := st
				if s.fresh {
					on = openAs(t, d, "alice-token")
					on.skipApplied()
				}
				r := on.claim("seq", s.seq, s.msg, nil, 0)
				if s.rev > 0 {
					require.NotNil(t, r.GetShellExec(), "sequence %d: %v", s.seq, r)
					assert.Equal(t, s.rev, r.GetShellExec().GetRevision(), "sequence %d", s.seq)
					continue
				}
				fe := r.GetFrameError()
				require.NotNil(t, fe, "sequence %d: %v", s.seq, r)
				assert.EqualValues(t, s.code, fe.GetCode(), "sequence %d: %s", s.seq, fe.GetMessage())
				assert.Contains(t, fe.GetMessage(), s.contains)
			}
			x := st.claim("seq", 0, idFinish("c1"), nil, 0).GetShellExec()
			require.NotNil(t, x)
			assert.EqualValues(t, 6, x.GetRevision())
			assert.Equal(t, "abcd", x.GetOutput().GetText(), "what was applied, once")
		})
	}
}

// A frame sent again after its answer left the store (past the last 64
// frames of the session) is ALREADY_EXISTS and changes nothing; one whose
// answer is kept is answered with it (with a store); the call goes on
// from where it was.
func TestHostileResendAfterTheAnswerWasEvicted(t *testing.T) {
	for _, store := range hostileStores(t) {
		t.Run(store.name, func(t *testing.T) {
			d := hostileDaemon(t, store.url)
			st := openAs(t, d, "alice-token")
			st.skipApplied()
			require.EqualValues(t, 1, st.claim("ev", 1, idOpen("c1", "make"), nil, 0).GetShellExec().GetRevision())
			const last = 70
			for seq := uint64(2); seq <= last; seq++ {
				require.EqualValues(t, seq, st.claim("ev", seq, idDelta("c1", "x"), nil, 0).GetShellExec().GetRevision())
			}
			again := openAs(t, d, "alice-token")
			again.skipApplied()
			fe := again.claim("ev", 2, idDelta("c1", "x"), nil, 0).GetFrameError()
			require.NotNil(t, fe, "frame 2's answer is gone (past the last 64)")
			assert.EqualValues(t, codes.AlreadyExists, fe.GetCode())
			assert.Contains(t, fe.GetMessage(), "frame 2 of session \"ev\" was applied before")
			r := again.claim("ev", last, idDelta("c1", "x"), nil, 0)
			if store.url != "" {
				require.NotNil(t, r.GetShellExec(), "the last frame's answer is kept: %v", r)
				assert.EqualValues(t, last, r.GetShellExec().GetRevision())
			} else {
				assert.EqualValues(t, codes.AlreadyExists, r.GetFrameError().GetCode(), "no store, no answers: %v", r)
			}
			x := again.claim("ev", last+1, idFinish("c1"), nil, 0).GetShellExec()
			require.NotNil(t, x)
			assert.EqualValues(t, last+1, x.GetRevision())
			assert.Equal(t, strings.Repeat("x", last-1), x.GetOutput().GetText(), "every delta once")
		})
	}
}

// A hostile client pipelines frames whose answers are large (each a
// 100 KiB delta), so that the server applies them in batches of one
// commit each. What Redis keeps of the session's answers stays within
// the documented bounds (the last 64 frames, 256 KiB per session).
func TestHostileAnswersInRedisStayBounded(t *testing.T) {
	srv := testredis.StartServer(t)
	d := hostileDaemon(t, srv.URL)
	st := openAs(t, d, "alice-token")
	st.skipApplied()
	require.EqualValues(t, 1, st.claim("big", 1, idOpen("c1", "yes"), nil, 0).GetShellExec().GetRevision())
	const frames = 48
	data := strings.Repeat("y", 100<<10)
	go func() {
		for seq := uint64(2); seq < 2+frames; seq++ {
			if st.st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "big", Sequence: seq, Message: []byte(idDelta("c1", data))}}}) != nil {
				return
			}
		}
	}()
	for range frames {
		require.NotNil(t, st.answer().GetShellExec())
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "acpnorm:*").Result()
	require.NoError(t, err)
	count, bytes := 0, 0
	for _, k := range keys {
		if typ, _ := rc.Type(ctx, k).Result(); typ != "hash" {
			continue
		}
		fields, err := rc.HGetAll(ctx, k).Result()
		require.NoError(t, err)
		for f, v := range fields {
			if strings.HasPrefix(f, "r:a:") {
				count++
				bytes += len(v)
			}
		}
	}
	assert.Positive(t, count, "answers are kept")
	assert.LessOrEqual(t, count, 64)
	assert.LessOrEqual(t, bytes, 256<<10, "bytes of answers Redis keeps for the session (%d records)", count)
}

// The refusals a hostile claim can draw stay short whatever it sends: an
// over-long session id is not echoed, and a session the process has no
// room for is named once. Each is counted where an operator sees it.
func TestHostileRefusalsAreBoundedAndCounted(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	rewrite(t, tokens, "alice alice-token\nmetrics scrape-token\n", 1)
	d := startDaemon(t, buildDaemon(t), "--auth-tokens-file", tokens, "--quota-sessions", "2")
	st := openAs(t, d, "alice-token")
	st.skipApplied()
	huge := strings.Repeat("s", 1<<20)
	for _, c := range []struct {
		name     string
		sid      string
		held     map[string]uint32
		heldSeq  uint64
		code     codes.Code
		contains string
	}{
		{"a session id of a megabyte, with held_revisions", huge, map[string]uint32{"c1": 3}, 0, codes.InvalidArgument, "session_id"},
		{"a session id of a megabyte, with held_sequence", huge, nil, 9, codes.InvalidArgument, "session_id"},
		{"a lost session", "a", map[string]uint32{"c1": 3}, 0, codes.DataLoss, `session "a" holds less than the client says was handed on`},
		{"another lost session", "b", nil, 4, codes.DataLoss, `session "b" holds less than the client says was handed on`},
		{"one session too many", "c", map[string]uint32{strings.Repeat("c", 256): 3}, 7, codes.ResourceExhausted, "--quota-sessions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fe := st.claim(c.sid, 5, idDelta("c1", "x"), c.held, c.heldSeq).GetFrameError()
			require.NotNil(t, fe)
			assert.EqualValues(t, c.code, fe.GetCode(), "%.300s", fe.GetMessage())
			assert.Contains(t, fe.GetMessage(), c.contains)
			assert.Less(t, len(fe.GetMessage()), 1024, "%.300s…", fe.GetMessage())
		})
	}
	metrics := func() string {
		req, err := http.NewRequest("GET", "http://"+d.metrics+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer scrape-token")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}()
	assert.Contains(t, metrics, "acpnorm_data_losses_detected_total 2")
	assert.Contains(t, metrics, `acpnorm_frame_errors_total{code="DataLoss"} 2`)
	assert.Contains(t, metrics, `acpnorm_frame_errors_total{code="InvalidArgument"} 2`)
	assert.Contains(t, metrics, `acpnorm_limit_refusals_total{identity="alice",limit="quota_sessions"} 1`)
}
