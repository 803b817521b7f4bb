package normalize_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FeedFrame with a Frame gives what Feed gives with the same fields as
// options, frame by frame, on every recording: the same revisions and
// the same FrameErrors, whether the frame was read ahead or not, and
// whether the dialect is named or detected.
func TestFeedFrameIsFeed(t *testing.T) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		for _, tc := range []struct {
			variant, dialect string
			ahead            bool
		}{{"detected", "", false}, {"read-ahead", "", true}, {"named-generic", "generic", true}} {
			t.Run(name+"/"+tc.variant, func(t *testing.T) {
				byOpts, byFrame := normalize.New(), normalize.New()
				var next string
				for i, msg := range frames(file) {
					seq := uint64(i + 1)
					var ahead *normalize.Prepared
					if tc.ahead {
						ahead = normalize.Prepare(msg, tc.dialect, next)
					}
					want, wantErr := byOpts.Feed("s", msg, normalize.WithSequence(seq), normalize.WithDialect(tc.dialect), normalize.WithCwd("/w"), normalize.WithPrepared(ahead))
					got, gotErr := byFrame.FeedFrame("s", normalize.Frame{Message: msg, Sequence: seq, Dialect: tc.dialect, Cwd: "/w", Prepared: ahead},
						normalize.WithNextReader(func(r string) { next = r }))
					require.Equal(t, want, got, "frame %d", seq)
					assert.Equal(t, wantErr, gotErr, "frame %d", seq)
				}
				want, _ := byOpts.CloseSession("s", normalize.WithSequence(1<<20))
				got, _ := byFrame.CloseSession("s", normalize.WithSequence(1<<20))
				assert.Equal(t, want, got)
			})
		}
	}
}
