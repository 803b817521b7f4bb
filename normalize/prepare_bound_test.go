package normalize

import (
	"strings"
	"sync"
	"testing"

	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readerIDs are reader ids as session.readerID makes them, and ids it
// does not make.
var readerIDs = []string{
	"claude", "opencode", "generic",
	"claude\n0.101.0", "claude\n0.16.2", "claude\n0.101.0\n" + `{"terminal":true}`,
	"claude\n\n" + `{"fs":{"readTextFile":true},"terminal":true}`, "opencode\n1.18.33",
	"codex\nv0.16.0\n" + `{"terminal":false}`,
	"", "nosuch", "nosuch\n1.0", "claude\n1.0\nnot json", "Claude\n0.101.0",
}

// fresh is what boundReader answers for id, worked out anew.
func fresh(t *testing.T, id string) (name string, v dialect.Version, c dialect.Client, ok bool) {
	if id == "" {
		return "", dialect.Version{}, dialect.Client{}, false
	}
	n, peers, withPeers := strings.Cut(id, "\n")
	d, ok := dialect.Lookup(n)
	if !ok {
		return "", dialect.Version{}, dialect.Client{}, false
	}
	if !withPeers {
		return d.Info().Name, dialect.VersionOf(d), dialect.ClientOf(d), true
	}
	version, caps, _ := strings.Cut(peers, "\n")
	client, err := dialect.ParseClient([]byte(caps))
	if err != nil {
		return "", dialect.Version{}, dialect.Client{}, false
	}
	b := dialect.BindPeers(d, dialect.ParseVersion(version), client)
	return b.Info().Name, dialect.VersionOf(b), dialect.ClientOf(b), true
}

// Whatever id boundReader answered before (its last answer is kept), it
// answers each id as a fresh look-up does.
func TestBoundReaderAnswersEachID(t *testing.T) {
	order := append(append(append([]string(nil), readerIDs...), readerIDs...), "claude\n0.101.0", "claude\n0.101.0", "claude", "claude\n0.101.0", "nosuch", "claude\n0.101.0")
	for i := len(readerIDs) - 1; i >= 0; i-- {
		order = append(order, readerIDs[i], readerIDs[(i+3)%len(readerIDs)])
	}
	for _, id := range order {
		name, v, c, ok := fresh(t, id)
		d, gotOK := boundReader(id)
		require.Equal(t, ok, gotOK, "%q", id)
		if !ok {
			continue
		}
		assert.Equal(t, name, d.Info().Name, "%q", id)
		assert.Equal(t, v, dialect.VersionOf(d), "%q", id)
		assert.Equal(t, c, dialect.ClientOf(d), "%q", id)
	}
}

// Streams that read ahead at once each get their own id's dialect.
func TestBoundReaderConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				id := readerIDs[(g+i)%6+3]
				_, v, c, _ := fresh(t, id)
				d, ok := boundReader(id)
				if !ok || dialect.VersionOf(d) != v || dialect.ClientOf(d) != c {
					t.Errorf("boundReader(%q) = %v, %v", id, d, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
}
