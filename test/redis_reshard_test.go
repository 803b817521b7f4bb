package test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpnorm/acpnorm/internal/testredis"
)

// playRestResharding plays the rest of every recording on new streams
// to a second acpnormd, as playRest does, while the slot of the
// recording's session moves to another master: the first frame meets
// the slot migrating with no key moved; then one key moves before every
// other frame, and before every frame sent again (answered UNAVAILABLE:
// the session's keys split between the two masters); once every key has
// moved, two frames are applied with the slot still importing (the old
// master answers ASK), and the move ends (SETSLOT NODE) before the rest.
// It returns how many frames were answered UNAVAILABLE and how many keys
// moved.
func (run *storeRun) playRestResharding(t *testing.T, to *replica, c *testredis.Cluster, prefix string) (unavailable, moved int) {
	t.Helper()
	for i, rec := range run.recs {
		fd := openFeed(t, to)
		fd.options(t, skipApplied)
		run.feeds[i] = fd
		r := c.MoveSlot(t, prefix+"{"+base64.RawURLEncoding.EncodeToString([]byte(rec.name))+"}")
		r.Start()
		movedHere := 0
		// step moves one more key of the slot; false when none is left.
		step := func() bool {
			keys := r.Keys(1)
			if len(keys) == 0 {
				return false
			}
			r.Migrate(keys[0])
			movedHere++
			return true
		}
		frames, left, afterMoved := 0, true, 0
		last := rec.lines[len(rec.lines)-1].Number
		for _, l := range rec.lines[run.cuts[i]:] {
			sends := 0
			got, n := untilApplied(t, fd, uint64(l.Number), func() {
				if left && (sends > 0 || frames%2 == 1) {
					left = step()
				}
				sends++
				fd.send(t, rec.name, l)
			})
			run.got[i] = append(run.got[i], got...)
			unavailable += n
			frames++
			if !left {
				if afterMoved++; afterMoved == 2 {
					r.Finish()
				}
			}
		}
		for left {
			left = step()
		}
		r.Finish()
		moved += movedHere
		got, n := untilApplied(t, fd, uint64(last+1), func() { fd.closeSession(t, rec.name, uint64(last+1)) })
		run.got[i] = append(run.got[i], got...)
		unavailable += n
		assert.Positive(t, movedHere, "%s: no key of the session's slot moved", rec.name)
	}
	for _, fd := range run.feeds {
		assert.Empty(t, fd.finish(t), "responses after the last barrier")
	}
	return unavailable, moved
}
