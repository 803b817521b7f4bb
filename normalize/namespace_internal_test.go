package normalize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// No two (namespace, session id) pairs share a key, and the default
// namespace's keys are the ids as they were before namespaces.
func TestNamespaceKeys(t *testing.T) {
	pairs := [][2]string{
		{"", "s"}, {"", ""}, {"", "\xff"}, {"", "\xff\x00s"}, {"", "\xff\x01as"}, {"", "\xff\x00"},
		{"a", "s"}, {"a", ""}, {"a", "\xffs"}, {"as", ""}, {"a", "\x01as"}, {"\xff", "s"},
		{"b", "s"}, {string(make([]byte, 200)), "s"}, {string(make([]byte, 201)), ""},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := newNamespace(p[0]).key(p[1])
		if other, dup := seen[k]; dup {
			t.Errorf("%q and %q share the key %q", p, other, k)
		}
		seen[k] = p
	}
	for _, id := range []string{"s", "ses_01J", "", "{x}", "a\x00b"} {
		assert.Equal(t, id, newNamespace("").key(id), "the default namespace keeps id %q as its key", id)
	}
}
