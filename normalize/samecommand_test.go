package normalize

import "testing"

func TestSameCommand(t *testing.T) {
	for _, tc := range []struct {
		ask       string
		fromTitle bool
		call      string
		want      bool
	}{
		{"", false, "ls", true},
		{"ls", false, "", true},
		{" ls ", false, "ls", true},
		{"rm -rf dist", false, "npm run watch", false},
		{"for f in *; do", true, "for f in *; do\n  echo $f\ndone", true},
		{"for f in *; do", false, "for f in *; do\n  echo $f\ndone", false},
		{"npm run build…", true, "npm run build -- --prod", true},
		{"npm run build...", true, "npm run build -- --prod", true},
		{"npm test…", true, "npm run build", false},
		{"…", true, "npm run build", false},
		{"npm", true, "npm run build", false},
		{"echo a", true, "echo a\necho b", true},
		{"echo b", true, "echo a\necho b", false},
	} {
		if got := sameCommand(tc.ask, tc.fromTitle, tc.call); got != tc.want {
			t.Errorf("sameCommand(%q, %v, %q) = %v, want %v", tc.ask, tc.fromTitle, tc.call, got, tc.want)
		}
	}
}
