package normalize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sortedClaims is checkedClaims as it was before it selected with a
// bounded heap: every id sorted, then the first bound taken. The
// selection must stay the same, so that every replica checks the same
// calls whichever build it runs.
func sortedClaims(ss *sessions, s *session, claims map[string]uint32) (map[string]uint32, int) {
	bound := 2 * ss.cfg.MaxCallsPerSession
	if len(claims) <= bound {
		return claims, 0
	}
	var own, others []string
	for id, n := range claims {
		if n == 0 || len(id) > ss.cfg.MaxIDBytes {
			continue
		}
		if _, floored := s.x.floorOf(id); s.calls[id] != nil || floored {
			own = append(own, id)
		} else {
			others = append(others, id)
		}
	}
	if len(own)+len(others) <= bound {
		return claims, 0
	}
	slices.Sort(own)
	slices.Sort(others)
	ids := append(own, others...)
	checked := make(map[string]uint32, bound)
	for _, id := range ids[:bound] {
		checked[id] = claims[id]
	}
	return checked, len(ids) - bound
}

// checkedClaims selects what sorting every id selected, on random claims
// around the bound: with few or many of the session's own calls (more
// than the bound too), floors, revisions 0 and ids too long to name a
// call among them.
func TestCheckedClaimsSelectsAsSortingDid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const maxID = 12
	id := func() string {
		// Short ids from a small alphabet, so that claims, calls and
		// floors share some; now and then one too long.
		n := 1 + rng.IntN(6)
		if rng.IntN(20) == 0 {
			n = maxID + 1 + rng.IntN(4)
		}
		var b strings.Builder
		for range n {
			b.WriteByte("abcxyz"[rng.IntN(6)])
		}
		return b.String()
	}
	for _, c := range []struct {
		perSession, claims, calls, floors int
	}{
		{1, 3, 0, 0},
		{2, 5, 1, 0},
		{3, 7, 0, 2},
		{4, 40, 3, 2},
		{4, 40, 20, 10}, // more of its own than the bound
		{8, 17, 8, 0},
		{8, 300, 8, 32},
		{16, 33, 0, 0},
		{16, 2000, 16, 64},
		{64, 129, 64, 256},
		{64, 5000, 5, 5},
	} {
		for round := range 20 {
			t.Run(fmt.Sprintf("%d-%d-%d-%d/%d", c.perSession, c.claims, c.calls, c.floors, round), func(t *testing.T) {
				ss := &sessions{cfg: config{MaxCallsPerSession: c.perSession, MaxIDBytes: maxID}}
				s := &session{calls: map[string]*entry{}}
				for range c.calls {
					s.calls[id()] = &entry{}
				}
				if c.floors > 0 {
					s.x = &extra{floors: map[string]floor{}}
					for range c.floors {
						s.x.floors[id()] = floor{floor: 1}
					}
				}
				claims := map[string]uint32{}
				for len(claims) < c.claims {
					n := uint32(1 + rng.IntN(9))
					if rng.IntN(10) == 0 {
						n = 0
					}
					claims[id()] = n
				}
				want, wantLeft := sortedClaims(ss, s, claims)
				got, left := ss.checkedClaims(s, claims)
				require.Equal(t, wantLeft, left)
				assert.Equal(t, want, got)
			})
		}
	}
}
