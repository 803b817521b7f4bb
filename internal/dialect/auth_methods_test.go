package dialect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/require"
)

// authMethodsWalked is how authMethodIDs read authMethods before it had a
// fast decode and matched keys with jsonlit.KeyIs: every element's
// members walked again with EachMember (keys folded by FoldKey), the
// string ids that are not empty kept, no element read once 64 are.
func authMethodsWalked(b []byte) authMethodIDs {
	var a authMethodIDs
	jsonlit.EachElement(b, func(val []byte) bool {
		jsonlit.EachMember(val, func(key string, val []byte) {
			var id Str
			if key == "ID" {
				if id.UnmarshalJSON(val); id.Set && id.S != "" {
					a = append(a, id.S)
				}
			}
		})
		return len(a) < 64
	})
	return a
}

// authMethodsSeeds are authMethods values of every shape.
var authMethodsSeeds = func() []string {
	seeds := []string{
		`null`, `[]`, `{}`, `"id"`, `7`, `true`, ` [ ] `, `[null,1,"x",[],{}]`,
		`[{"id":"a"},{"id":"b","name":"B"},{"name":"C"}]`,
		`[{"ID":"a"},{"Id":"b"},{"iD":"c"},{"\u0069d":"d"},{"i\u0044":"e"},{"idx":"f"},{"ıd":"g"}]`,
		`[{"id":"a","id":"b"},{"id":null},{"id":""},{"id":5},{"id":["x"]},{"id":{"id":"in"}}]`,
		`[{"id":"esc\"aped \u00e9 \ud800"},{"id":"a\u0000b"}]`,
		"[{\"id\":\"bad \xff utf8\"}]",
		` [ { "id" : "sp" , "x" : [ { "id" : "deep" } ] } , { } ] `,
		`[{"id":"a"},]`, `[{"id":"a"}`, `[{"id" "a"}]`, `[{"id":"\q"}]`, `[{"id":}]`, `[{,}]`,
		"[{\"id\":\"a\x01\"}]",
	}
	// More ids than are read, some methods with two, on either side of
	// the bound.
	var many []string
	for i := range 70 {
		m := fmt.Sprintf(`{"id":"m%d"}`, i)
		if i%9 == 0 {
			m = fmt.Sprintf(`{"id":"m%d","ID":"again%d"}`, i, i)
		}
		many = append(many, m)
	}
	return append(seeds, "["+strings.Join(many, ",")+"]", "["+strings.Join(many[:63], ",")+`,{"id":"x","id":"y"},{"id":"z"}]`)
}()

// checkAuthMethods holds authMethodIDs' UnmarshalJSON and its fast decode
// (in the fast decoder's pass) to authMethodsWalked on the value b of an
// initialize result's authMethods. It says whether the fast decoder read
// it.
func checkAuthMethods(t *testing.T, b []byte) bool {
	t.Helper()
	var slow authMethodIDs
	if json.Valid(b) && json.Unmarshal(b, &slow) == nil {
		require.Equal(t, authMethodsWalked(b), slow, "UnmarshalJSON of %s", b)
	}
	return checkFastValue[authMethodIDs](t, b)
}

func TestAuthMethodIDsFastIsUnmarshalJSON(t *testing.T) {
	fast := 0
	for _, s := range authMethodsSeeds {
		if checkAuthMethods(t, []byte(s)) {
			fast++
		}
	}
	require.Greater(t, fast, 10)
}

// FuzzAuthMethodIDs looks for authMethods that the fast decode, or
// UnmarshalJSON, reads otherwise than the walk they replaced.
func FuzzAuthMethodIDs(f *testing.F) {
	for _, s := range authMethodsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAuthMethods(t, b)
	})
}
