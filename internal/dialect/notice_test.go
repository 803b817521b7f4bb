package dialect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUTF16Index(t *testing.T) {
	const pair = "😀" // two UTF-16 units, four UTF-8 bytes
	for _, tc := range []struct {
		s    string
		n    int
		want int
	}{
		{"", 0, 0},
		{"", 1, -1},
		{"abc", 0, 0},
		{"abc", 2, 2},
		{"abc", 3, 3},
		{"abc", 4, -1},
		{"é" + "x", 1, 2},
		{pair + "x", 2, 4},
		{pair + "x", 1, -1}, // inside the pair
		{"a" + pair, 2, -1},
		{"a" + pair, 3, 5},
		{"\xff" + "x", 1, 1}, // an invalid byte is one U+FFFD, one unit
	} {
		assert.Equal(t, tc.want, utf16Index(tc.s, tc.n), "utf16Index(%q, %d)", tc.s, tc.n)
		if tc.want >= 0 {
			assert.Equal(t, tc.n, utf16Len(tc.s[:tc.want]), "utf16Len(%q)", tc.s[:tc.want])
		}
	}
	long := strings.Repeat(pair, 3) + "tail"
	assert.Equal(t, 10, utf16Len(long))
	assert.Equal(t, 12, utf16Index(long, 6))
}
