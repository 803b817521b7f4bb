package service

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

// snapshotCall is a generic ACP call whose output comes as cumulative
// snapshots (the whole output so far as content text) and ends with the
// whole output again.
func snapshot(id, status, text string) string {
	return update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"content":[{"type":"content","content":{"type":"text","text":%q}}]}`, id, status, text))
}

func options(t pb.FinalTexts) *pb.NormalizeRequest {
	return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{FinalTexts: t}}}
}

// A stream that asks for FINAL_TEXTS_CHANGES gets an ENDED revision with
// only what changed; the default stays whole; a stream that did not carry
// the earlier revisions still gets the whole text.
func TestFinalTextsChanges(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	run := func(st *stream, sid string) (live, final *pb.ShellExec) {
		t.Helper()
		st.send(sid, openCall("c1", "make"))
		st.exec()
		st.send(sid, snapshot("c1", "in_progress", "a\n"))
		st.exec()
		st.send(sid, snapshot("c1", "in_progress", "a\nb\n"))
		live = st.exec()
		st.send(sid, snapshot("c1", "completed", "a\nb\nc\n"))
		return live, st.exec()
	}

	whole := h.open()
	if _, x := run(whole, "s-whole"); x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE || x.GetOutput().GetText() != "a\nb\nc\n" {
		t.Fatalf("default final: %v", x.GetOutput())
	}

	changes := h.open()
	changes.control(options(pb.FinalTexts_FINAL_TEXTS_CHANGES))
	live, x := run(changes, "s-changes")
	if live.GetOutput().GetText() != "b\n" {
		t.Fatalf("live revision: %v", live.GetOutput())
	}
	if x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_APPEND || x.GetOutput().GetText() != "c\n" || x.GetOutput().GetTotalBytes() != 6 {
		t.Fatalf("changes-only final: %v", x)
	}

	// An ENDED revision with no new text carries no text at all.
	changes.send("s-changes", openCall("c2", "true"))
	changes.exec()
	changes.send("s-changes", snapshot("c2", "in_progress", "x"))
	changes.exec()
	changes.send("s-changes", finish("c2", 0))
	if x := changes.exec(); x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.Output != nil {
		t.Fatalf("unchanged final: %v", x)
	}

	// Output that comes after the ENDED revision (a cancelled command that
	// still prints) is also only what changed on such a stream: the stream
	// carried the ENDED revision, so the next one follows it.
	changes.send("s-changes", openCall("c5", "tail -f log"))
	changes.exec()
	changes.send("s-changes", snapshot("c5", "completed", "m\n"))
	changes.exec()
	changes.send("s-changes", snapshot("c5", "completed", "m\nn\n"))
	if x := changes.exec(); x.GetState() != pb.ShellState_SHELL_STATE_ENDED || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_APPEND || x.GetOutput().GetText() != "n\n" || x.GetOutput().GetTotalBytes() != 4 {
		t.Fatalf("revision after ENDED: %v", x)
	}

	// A call whose earlier revisions went to another stream ends whole.
	changes.send("s-moved", openCall("c3", "ls"))
	changes.exec()
	changes.send("s-moved", snapshot("c3", "in_progress", "p\n"))
	changes.exec()
	other := h.open()
	other.control(options(pb.FinalTexts_FINAL_TEXTS_CHANGES))
	other.send("s-moved", snapshot("c3", "completed", "p\nq\n"))
	if x := other.exec(); x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE || x.GetOutput().GetText() != "p\nq\n" {
		t.Fatalf("final on a stream that missed revisions: %v", x.GetOutput())
	}

	// Asking for whole finals again restores the default.
	changes.control(options(pb.FinalTexts_FINAL_TEXTS_WHOLE))
	changes.send("s-back", openCall("c4", "ls"))
	changes.exec()
	changes.send("s-back", snapshot("c4", "completed", "z\n"))
	if x := changes.exec(); x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE {
		t.Fatalf("whole again: %v", x.GetOutput())
	}
}

// A stream that asks for skip_applied_sequences can send again what it has
// no answer for, on a new stream after losing the old one: a frame whose
// sequence its session already applied gets ALREADY_EXISTS and changes
// nothing. Without the option a frame sent again is applied again.
func TestSkipAppliedSequences(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	skip := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Options{Options: &pb.StreamOptions{SkipAppliedSequences: true}}}
	a := h.open()
	a.control(skip)
	a.send("s", openCall("c1", "make"))
	a.exec()
	a.send("s", delta("c1", "x\n"))
	a.exec()

	b := h.open()
	b.control(skip)
	b.seq = 1
	b.send("s", delta("c1", "x\n")) // sequence 2 again
	if fe := b.frameError(); fe.GetCode() != int32(codes.AlreadyExists) || fe.GetSequence() != 2 || !strings.Contains(fe.GetMessage(), "applied before") {
		t.Fatalf("a frame sent again: %v", fe)
	}
	b.send("s", delta("c1", "y\n")) // sequence 3
	if x := b.exec(); x.GetRevision() != 3 || x.GetOutput().GetText() != "x\ny\n" || x.GetOutput().GetMode() != pb.TextMode_TEXT_MODE_REPLACE {
		t.Fatalf("the next frame on the new stream: %v", x)
	}

	c := h.open()
	c.seq = 2
	c.send("s", delta("c1", "y\n")) // sequence 3 again, not skipped
	if x := c.exec(); x.GetRevision() != 4 || x.GetOutput().GetText() != "x\ny\ny\n" {
		t.Fatalf("a frame sent again without the option: %v", x)
	}
}

// On every recording, a stream that asks for FINAL_TEXTS_CHANGES folds to
// the same texts as one with whole finals, never carries more text, and
// never sends as a REPLACE a text that only extends what the client
// holds (that would be an APPEND of the new part).
func TestFinalTextsChangesOnRecordings(t *testing.T) {
	for _, rec := range recordings(t) {
		name := rec.name
		play := func(finals pb.FinalTexts) (folded map[string]string, wire int) {
			ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
			var d *delivered
			if finals == pb.FinalTexts_FINAL_TEXTS_CHANGES {
				d = newDelivered()
				d.setOptions(&pb.StreamOptions{FinalTexts: finals})
			}
			folded = map[string]string{}
			feed := ss.newFeeder(context.Background(), d, func(out *pb.NormalizeResponse) error {
				x := out.GetShellExec()
				for i, tx := range []*pb.ShellText{x.GetOutput(), x.GetStdout(), x.GetStderr()} {
					if tx == nil {
						continue
					}
					k := fmt.Sprint(x.GetToolCallId(), "/", i)
					held := folded[k]
					wire += len(tx.GetText())
					if tx.GetMode() == pb.TextMode_TEXT_MODE_APPEND {
						folded[k] = held + tx.GetText()
						continue
					}
					if finals == pb.FinalTexts_FINAL_TEXTS_CHANGES && held != "" && len(tx.GetText()) > len(held) && strings.HasPrefix(tx.GetText(), held) {
						t.Errorf("%s: %s revision %d replaces %d bytes with a text that extends them", name, k, x.GetRevision(), len(held))
					}
					folded[k] = tx.GetText()
				}
				return nil
			})
			for _, req := range rec.frames("s") {
				if _, err := feed.handle(req, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := feed.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}}, nil); err != nil {
				t.Fatal(err)
			}
			return folded, wire
		}
		whole, wholeWire := play(pb.FinalTexts_FINAL_TEXTS_WHOLE)
		changes, changesWire := play(pb.FinalTexts_FINAL_TEXTS_CHANGES)
		if !maps.Equal(whole, changes) {
			t.Errorf("%s: the texts folded from changes-only finals differ from whole finals", name)
		}
		if changesWire > wholeWire {
			t.Errorf("%s: changes-only finals carry %d text bytes, whole finals %d", name, changesWire, wholeWire)
		}
	}
}

// A StreamOptions this server cannot honour (a final_texts value it does
// not know, from a newer contract or a bad client) is refused by name,
// and the stream keeps the options it had.
func TestUnknownFinalTextsIsRefused(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	st := h.open()
	st.control(options(pb.FinalTexts_FINAL_TEXTS_CHANGES))
	st.control(options(pb.FinalTexts(99)))
	fe := st.frameError()
	assert.Equal(t, codes.InvalidArgument, codes.Code(fe.GetCode()))
	assert.Contains(t, fe.GetMessage(), "final_texts 99")
	// Still FINAL_TEXTS_CHANGES: the ENDED revision carries what changed.
	st.send("s", openCall("c1", "make"))
	st.exec()
	st.send("s", snapshot("c1", "in_progress", "a\n"))
	st.exec()
	st.send("s", snapshot("c1", "completed", "a\nb\n"))
	x := st.exec()
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode(), "final %v", x)
	assert.Equal(t, "b\n", x.GetOutput().GetText())
}
