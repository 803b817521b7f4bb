package fold_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// vectors is test/testdata/fold/vectors.json, which the TypeScript and
// Python suites read too.
type vectors struct {
	Cases []struct {
		Name  string
		Limit int
		Steps []struct {
			Revision json.RawMessage
			Error    string
			Applied  bool
		}
		Want []json.RawMessage
	}
}

func load(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("../test/testdata/fold/vectors.json")
	require.NoError(t, err)
	var v vectors
	require.NoError(t, json.Unmarshal(raw, &v))
	require.NotEmpty(t, v.Cases, "no cases")
	return v
}

func exec(t *testing.T, raw json.RawMessage) *pb.ShellExec {
	t.Helper()
	x := &pb.ShellExec{}
	if err := protojson.Unmarshal(raw, x); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return x
}

func TestVectors(t *testing.T) {
	for _, c := range load(t).Cases {
		t.Run(c.Name, func(t *testing.T) {
			f := fold.Folder{Limit: c.Limit}
			for i, s := range c.Steps {
				x := exec(t, s.Revision)
				err := f.Apply(x)
				var fe *fold.Error
				switch {
				case s.Error == "" && err != nil:
					t.Fatalf("step %d: unexpected error: %v", i, err)
				case s.Error != "" && !errors.As(err, &fe):
					t.Fatalf("step %d: want a %s error, got %v", i, s.Error, err)
				case s.Error != "" && fe.Kind.String() != s.Error:
					t.Fatalf("step %d: want a %s error, got %s: %v", i, s.Error, fe.Kind, err)
				case fe != nil && fe.Applied != s.Applied:
					t.Fatalf("step %d: applied %v, want %v: %v", i, fe.Applied, s.Applied, err)
				case fe != nil && (fe.Got != x.GetRevision() || fe.Key != fold.KeyOf(x) || !strings.Contains(err.Error(), x.GetToolCallId())):
					t.Fatalf("step %d: error does not name the revision: %+v", i, fe)
				}
			}
			keys := f.Calls()
			require.Len(t, keys, len(c.Want), "calls held")
			for i, k := range keys {
				want := exec(t, c.Want[i])
				if got := f.State(k); !proto.Equal(got, want) {
					assert.Equal(t, protojson.Format(want), protojson.Format(got), "call %d", i)
				}
			}
		})
	}
}

// A state handed out is never changed by later revisions, and the folder
// keeps no reference to the revisions it was given.
func TestStateIsStable(t *testing.T) {
	var f fold.Folder
	r1 := &pb.ShellExec{SessionId: "s", ToolCallId: "c", Revision: 1, Output: &pb.ShellText{Text: "a", Mode: pb.TextMode_TEXT_MODE_APPEND}}
	if err := f.Apply(r1); err != nil {
		t.Fatal(err)
	}
	r1.Output.Text = "changed by the caller"
	k := fold.Key{SessionID: "s", ToolCallID: "c"}
	first := f.State(k)
	if f.State(k) != first {
		t.Error("State without Apply built a new message")
	}
	if err := f.Apply(&pb.ShellExec{SessionId: "s", ToolCallId: "c", Revision: 2, Output: &pb.ShellText{Text: "b", Mode: pb.TextMode_TEXT_MODE_APPEND}}); err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, "a", first.GetOutput().GetText(), "an earlier state changed")
	assert.Equal(t, "ab", f.State(k).GetOutput().GetText(), "folded state")
	if f.State(fold.Key{SessionID: "s", ToolCallID: "other"}) != nil {
		t.Error("state of a call never applied")
	}
	f.Delete(k)
	if len(f.Calls()) != 0 || f.State(k) != nil {
		t.Error("Delete kept the call")
	}
	if err := f.Apply(nil); err == nil {
		t.Error("nil revision accepted")
	}
}

// 100 000 one-byte deltas fold into one 100 000-byte text (the buffer grows
// amortised, so this stays fast).
func TestManyAppends(t *testing.T) {
	var f fold.Folder
	const n = 100000
	for i := 1; i <= n; i++ {
		if err := f.Apply(&pb.ShellExec{SessionId: "s", ToolCallId: "c", Revision: uint32(i), Output: &pb.ShellText{Text: "x", Mode: pb.TextMode_TEXT_MODE_APPEND}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(f.State(fold.Key{SessionID: "s", ToolCallID: "c"}).GetOutput().GetText()); got != n {
		t.Fatalf("text of %d bytes, want %d", got, n)
	}
}

// A Limit as large as an int can be keeps everything, and cuts nothing.
func TestHugeLimit(t *testing.T) {
	f := fold.Folder{Limit: math.MaxInt}
	for i, s := range []string{"a", "é", "c"} {
		require.NoError(t, f.Apply(&pb.ShellExec{SessionId: "s", ToolCallId: "c", Revision: uint32(i + 1), Output: &pb.ShellText{Text: s, Mode: pb.TextMode_TEXT_MODE_APPEND}}))
	}
	got := f.State(fold.Key{SessionID: "s", ToolCallID: "c"}).GetOutput()
	assert.Equal(t, "aéc", got.GetText())
	assert.False(t, got.GetTruncated())
}

// Revision says the latest revision applied to a call, as State's does,
// and false for a call never applied.
func TestRevision(t *testing.T) {
	var f fold.Folder
	k := fold.Key{SessionID: "s", ToolCallID: "c"}
	_, ok := f.Revision(k)
	require.False(t, ok)
	for i := 1; i <= 3; i++ {
		require.NoError(t, f.Apply(&pb.ShellExec{SessionId: "s", ToolCallId: "c", Revision: uint32(i), Output: &pb.ShellText{Text: "x", Mode: pb.TextMode_TEXT_MODE_APPEND}}))
		n, ok := f.Revision(k)
		require.True(t, ok)
		require.Equal(t, uint32(i), n)
		require.Equal(t, f.State(k).GetRevision(), n)
	}
}
