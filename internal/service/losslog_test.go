package service

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/acpnorm/acpnorm/normalize"
)

// A DATA_LOSS the server answers is logged at WARN, naming the session,
// its identity and the request, with what was lost; a burst of them
// makes one line, not one each (the metric counts each).
func TestDataLossIsLogged(t *testing.T) {
	var out testlog.Buffer
	svc, err := New(DefaultConfig(), nil, slog.New(slog.NewTextHandler(&out, nil)))
	require.NoError(t, err)
	h := newHarnessWith(t, svc) // a process that kept nothing of the sessions
	st := h.open()
	const n = 50
	for i := range n {
		st.control(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: "lost-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Sequence: 7,
			Message:       []byte(openCall("c1", "make test")),
			HeldRevisions: map[string]uint32{"c1": 3},
		}}})
		require.EqualValues(t, codes.DataLoss, st.frameError().GetCode())
	}
	var lines []string
	for _, l := range out.Lines() {
		if strings.Contains(l, "DATA_LOSS") {
			lines = append(lines, l)
		}
	}
	require.NotEmpty(t, lines, "no log line of a DATA_LOSS:\n%s", strings.Join(out.Lines(), "\n"))
	assert.LessOrEqual(t, len(lines), 2, "%d DATA_LOSS answers made %d lines: %q", n, len(lines), lines)
	first := lines[0]
	assert.Contains(t, first, "level=WARN")
	assert.Contains(t, first, `session=lost-a`)
	assert.Contains(t, first, "identity=default")
	assert.Contains(t, first, "sequence=7")
	assert.Contains(t, first, `revision 3 was handed on`)
}

// lossLog logs the first DATA_LOSS at once, then at most one line every
// lossLogEvery with how many were answered since the last line and the
// last one's session, identity and detail, all of that one answer.
func TestLossLogRateLimited(t *testing.T) {
	var out testlog.Buffer
	now := time.Unix(0, 0)
	l := newLossLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now })
	for i := range 100 {
		who, session := "alice", "sa"
		if i%2 == 1 {
			who, session = "bob", "sb"
		}
		l.note(who, &normalize.FrameError{SessionID: session, Sequence: uint64(i + 1), Code: normalize.DataLoss, Message: "lost " + session})
		now = now.Add(time.Second)
	}
	lines := out.Lines()
	// The first, then one at 10 s, 20 s, ... 90 s.
	require.Len(t, lines, 10, "%q", lines)
	assert.Contains(t, lines[0], "answered=1")
	assert.Contains(t, lines[0], "session=sa")
	assert.Contains(t, lines[0], "identity=alice")
	assert.Contains(t, lines[1], "answered=10")
	assert.Contains(t, lines[1], "since=10s")
	// i = 10 is alice's: her session, her detail.
	assert.Contains(t, lines[1], "session=sa")
	assert.Contains(t, lines[1], "identity=alice")
	assert.Contains(t, lines[1], `detail="lost sa"`)
	assert.NotContains(t, lines[1], "sb")
	for _, line := range lines {
		assert.Contains(t, line, "level=WARN")
	}
}
