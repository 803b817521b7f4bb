package normalize_test

import (
	"errors"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client whose stream broke right after the frame that ended a call
// (its answer, the ENDED revision, lost on the way) sends that frame
// again on a new stream, saying it holds an earlier revision of the call.
// Without a store the frame's answer is not kept (ALREADY_EXISTS), so the
// call's ENDED revision is handed on again, whole, marked Again, and so
// is that of a call that ended unseen (the client names none of its
// revisions): nothing the client missed is lost. A call the client holds
// whole, or that has not ended, gets nothing.
func TestMissedEndedRevisionHandedOnAgain(t *testing.T) {
	n := normalize.New()
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`
	end := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"a\n","exit_code":0}}}}`
	other := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c2","kind":"execute","title":"pwd","status":"in_progress","rawInput":{"command":"pwd"}}}}`
	unseen := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c3","kind":"execute","title":"true","status":"completed","rawInput":{"command":"true"},"rawOutput":{"output":"","exit_code":0}}}}`
	var held uint32
	for i, f := range []string{open, other, end, unseen} {
		out, err := n.Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
		for _, x := range out {
			if x.ToolCallID == "c1" && x.State != normalize.StateEnded {
				held = x.Revision // the client got these; the ENDED one is lost
			}
		}
	}
	require.NotZero(t, held)
	var evs []normalize.Event
	_, err := n.Feed("s", []byte(end), normalize.WithSequence(3), normalize.WithSkipApplied(),
		normalize.WithHeld(map[string]uint32{"c1": held, "c2": 1}), normalize.WithHeldSequence(2),
		normalize.WithEmit(func(ev normalize.Event) error { evs = append(evs, ev); return nil }))
	require.NoError(t, err)
	require.Len(t, evs, 3, "%+v", evs)
	x := evs[0].ShellExec
	require.NotNil(t, x, "the ENDED revision of c1 first")
	assert.True(t, evs[0].Again)
	assert.Equal(t, "c1", x.ToolCallID)
	assert.Equal(t, normalize.StateEnded, x.State)
	assert.Equal(t, normalize.Succeeded, x.Outcome)
	require.NotNil(t, x.Output)
	assert.Equal(t, normalize.Replace, x.Output.Mode)
	assert.Equal(t, "a\n", x.Output.Text)
	require.NotNil(t, evs[1].ShellExec, "then c3's, which ended unseen")
	assert.Equal(t, "c3", evs[1].ShellExec.ToolCallID)
	assert.Equal(t, normalize.StateEnded, evs[1].ShellExec.State)
	assert.True(t, evs[1].Again)
	require.NotNil(t, evs[2].Error)
	assert.Equal(t, normalize.AlreadyExists, evs[2].Error.Code)
}

// A client that had seen no revision when its stream broke names no call,
// only the sequence it had answers for: every call that ended since is
// handed on again.
func TestMissedEndedRevisionsOfACallerThatSawNone(t *testing.T) {
	n := normalize.New()
	initialize := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"x"}}}`
	ended := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"true","status":"completed","rawInput":{"command":"true"},"rawOutput":{"output":"","exit_code":0}}}}`
	for i, f := range []string{initialize, ended} {
		_, err := n.Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
	}
	var evs []normalize.Event
	_, err := n.Feed("s", []byte(ended), normalize.WithSequence(2), normalize.WithSkipApplied(), normalize.WithHeldSequence(1),
		normalize.WithEmit(func(ev normalize.Event) error { evs = append(evs, ev); return nil }))
	require.NoError(t, err)
	require.Len(t, evs, 2, "%+v", evs)
	require.NotNil(t, evs[0].ShellExec)
	assert.Equal(t, "c1", evs[0].ShellExec.ToolCallID)
	assert.True(t, evs[0].Again)
	require.NotNil(t, evs[1].Error)
	assert.Equal(t, normalize.AlreadyExists, evs[1].Error.Code)
}

// A client that saw nothing before its stream broke, and says nothing of
// what it holds, sends its frames again from the first: each frame that
// ended a call, applied before and whose answer is not kept, hands the
// call's ENDED revision on again.
func TestMissedEndedRevisionOfAFrameSentAgain(t *testing.T) {
	n := normalize.New()
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`
	end := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"a\n","exit_code":0}}}}`
	for i, f := range []string{open, end} {
		_, err := n.Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
	}
	var ended []*normalize.ShellExec
	for i, f := range []string{open, end} {
		_, err := n.Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied(),
			normalize.WithEmit(func(ev normalize.Event) error {
				if ev.ShellExec != nil {
					assert.True(t, ev.Again)
					ended = append(ended, ev.ShellExec)
				}
				return nil
			}))
		require.NoError(t, err)
	}
	require.Len(t, ended, 2, "each frame about the ended call hands it on")
	assert.Equal(t, uint64(1), ended[0].Sequence, "answering the frame sent again")
	ended[1].Sequence = ended[0].Sequence
	assert.Equal(t, ended[0], ended[1])
	assert.Equal(t, normalize.StateEnded, ended[0].State)
	assert.Equal(t, "a\n", ended[0].Output.Text)
}

// A stream that breaks while a frame ends several calls (a turn's end,
// a close) loses the ENDED revisions still to be sent: each of them is
// still made and counted, so that the frame sent again, with what the
// client holds, hands every one on. None is left open on the client.
func TestMissedEndedRevisionsOfAFrameThatEndedMany(t *testing.T) {
	n := normalize.New()
	open := func(id string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"sleep 9","status":"in_progress","rawInput":{"command":"sleep 9"}}}}`
	}
	turnEnd := `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`
	held := map[string]uint32{}
	ids := []string{"c1", "c2", "c3", "c4"}
	for i, id := range ids {
		out, err := n.Feed("s", []byte(open(id)), normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied())
		require.NoError(t, err)
		require.Len(t, out, 1)
		held[id] = out[0].Revision
	}
	seq := uint64(len(ids) + 1)
	cut := errors.New("stream cut")
	sent := 0
	_, err := n.Feed("s", []byte(turnEnd), normalize.WithSequence(seq), normalize.WithSkipApplied(),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.ShellExec != nil && ev.ShellExec.State == normalize.StateEnded {
				sent++
				if sent == 1 {
					held[ev.ShellExec.ToolCallID] = ev.ShellExec.Revision // the client got this one
				}
				return cut
			}
			return nil
		}))
	require.ErrorIs(t, err, cut)
	require.Equal(t, 1, sent, "nothing is sent after the cut")

	got := map[string]*normalize.ShellExec{}
	_, err = n.Feed("s", []byte(turnEnd), normalize.WithSequence(seq), normalize.WithSkipApplied(),
		normalize.WithHeld(held), normalize.WithHeldSequence(seq-1),
		normalize.WithEmit(func(ev normalize.Event) error {
			if x := ev.ShellExec; x != nil {
				assert.True(t, ev.Again)
				got[x.ToolCallID] = x
			}
			return nil
		}))
	require.NoError(t, err)
	require.Len(t, got, len(ids)-1, "every call whose ENDED revision the cut lost")
	for _, id := range ids {
		x := got[id]
		if x == nil {
			continue
		}
		assert.Equal(t, normalize.StateEnded, x.State, id)
		assert.Equal(t, held[id]+1, x.Revision, "%s: the revision after the one the client holds", id)
	}
}
