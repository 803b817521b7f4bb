package dialect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opencodeBlockOrUnsetWant is what opencodeFinal asked before
// opencodeBlockOrUnset: the text unquoted, then searched.
func opencodeBlockOrUnsetWant(r rawText) bool {
	out := r.Str()
	return !out.Set || opencodeHasBlock(out.S)
}

// opencodeBlockLiterals are metadata outputs with and without a block's
// opening tag, spelled plainly and through every escape JSON has, as
// validated literals.
func opencodeBlockLiterals(t testing.TB) [][]byte {
	texts := []string{"", "a", "(no output)", "ok\n", strings.Repeat("1234\n", 500)}
	for _, tag := range append(append([]string{}, opencodeOpenTags...), opencodeCloseTags...) {
		texts = append(texts, tag, "out\n\n"+tag+"\nexit 0\n"+strings.Replace(tag, "<", "</", 1), tag[:len(tag)-1], tag[1:], "\\"+tag, `"`+tag+`"`)
	}
	var lits [][]byte
	for _, text := range texts {
		plain, err := json.Marshal(text) // escapes < and > as \u003c, \u003e
		require.NoError(t, err)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(text))
		lits = append(lits, plain, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		// Each byte of the text as a \u escape in turn, and a slash as \/.
		for i := range len(text) {
			if text[i] < 0x80 {
				lit := append([]byte(`"`), jsonEscapeBody(text[:i])...)
				lit = append(lit, []byte(`\u00`+strings.ToLower(hex2(text[i])))...)
				lit = append(append(lit, jsonEscapeBody(text[i+1:])...), '"')
				lits = append(lits, lit)
			}
		}
		lits = append(lits, []byte(`"`+strings.ReplaceAll(string(jsonEscapeBody(text)), "/", `\/`)+`"`))
	}
	return lits
}

func hex2(b byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// jsonEscapeBody is text as the body of a literal, with no HTML escapes.
func jsonEscapeBody(text string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(text); err != nil {
		panic(err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}

func TestOpencodeBlockOrUnsetIsTheDecode(t *testing.T) {
	blocks := 0
	lits := opencodeBlockLiterals(t)
	for _, lit := range lits {
		require.True(t, json.Valid(lit), "%s", lit)
		r := rawText{lit: lit}
		want := opencodeBlockOrUnsetWant(r)
		if want {
			blocks++
		}
		assert.Equal(t, want, opencodeBlockOrUnset(r), "%.120s", lit)
		// The same text decoded by the walk.
		d := rawText{lit: lit, text: r.Str().S, decoded: true}
		assert.Equal(t, want, opencodeBlockOrUnset(d), "decoded %.120s", lit)
	}
	assert.True(t, opencodeBlockOrUnset(rawText{}), "an absent metadata.output")
	assert.Greater(t, blocks, 100, "the literals hold tags")
	assert.Less(t, blocks, len(lits)-100, "and texts without one")
}

func FuzzOpencodeBlockOrUnset(f *testing.F) {
	for _, lit := range opencodeBlockLiterals(f) {
		if len(lit) < 512 {
			f.Add(lit)
		}
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		var s string
		if json.Unmarshal(lit, &s) != nil || !json.Valid(lit) {
			return // rawText holds validated literals only
		}
		lit = bytes.TrimSpace(lit)
		r := rawText{lit: lit}
		if got, want := opencodeBlockOrUnset(r), opencodeBlockOrUnsetWant(r); got != want {
			t.Fatalf("opencodeBlockOrUnset(%s) = %v, the decode %v", lit, got, want)
		}
	})
}

// BenchmarkOpencodeBlockOrUnset is a final's metadata.output (12 KB of
// seq output, no block) read for its block by the decode and by the
// literal.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkOpencodeBlockOrUnset
func BenchmarkOpencodeBlockOrUnset(b *testing.B) {
	lit, err := json.Marshal(strings.Repeat("1234\n", 2400))
	require.NoError(b, err)
	r := rawText{lit: lit}
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if opencodeBlockOrUnsetWant(r) {
				b.Fatal()
			}
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			if opencodeBlockOrUnset(r) {
				b.Fatal()
			}
		}
	})
}

// opencodeMetaBlock is the trailing metadata block OpenCode appends for
// the model, with the blank line before it: the pattern
// opencodeMetaBlockIn stands for.
var opencodeMetaBlock = regexp.MustCompile(`(?s)(?:\n\n)?<(shell|bash)_metadata>\n?(.*?)\n?</(?:shell|bash)_metadata>\s*$`)

// opencodeMetaBlockTexts are texts with metadata blocks, cut and
// doubled, their tags and line breaks moved about, and near misses.
func opencodeMetaBlockTexts() []string {
	blocks := []string{
		"\n\n<shell_metadata>\nexit code 0\n</shell_metadata>", "<bash_metadata>\nbash tool terminated command after exceeding timeout 1000 ms\n</bash_metadata>\n",
		"<shell_metadata></shell_metadata>", "<shell_metadata>\n</shell_metadata>", "<shell_metadata>\n\n</shell_metadata>", "<bash_metadata>x</shell_metadata> \t\r\f\n",
		"\n<shell_metadata>\n\nnote\n\n</bash_metadata>\n\n", "\n\n\n<shell_metadata>a\n</shell_metadata>\v",
	}
	heads := []string{"", "out", "out\n", "out\n\n", "a <b> c\n<shell_metadata>", "</shell_metadata>\n", "<bash_metadata>\n\n", "\xff<", strings.Repeat("1234\n", 200)}
	var texts []string
	texts = append(texts, dialectGuardSamples...)
	for _, b := range blocks {
		for _, h := range heads {
			texts = append(texts, h+b, h+b+b, b+h, h+b+"x", h+b+"\n"+h)
			for i := range len(b) {
				texts = append(texts, h+b[:i]+b[i+1:], h+b[:i]+"\n"+b[i:], h+b[:i]+"<"+b[i:])
			}
		}
	}
	return texts
}

func TestOpencodeMetaBlockInIsThePattern(t *testing.T) {
	matched := 0
	for _, text := range opencodeMetaBlockTexts() {
		want := opencodeMetaBlock.FindStringSubmatchIndex(text)
		if want != nil {
			matched++
		}
		assert.Equal(t, want, opencodeMetaBlockIn(text), "%.120q", text)
	}
	assert.Greater(t, matched, 200, "the texts hold blocks")
}

func FuzzOpencodeMetaBlockIn(f *testing.F) {
	for _, text := range opencodeMetaBlockTexts() {
		if len(text) < 512 {
			f.Add(text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := opencodeMetaBlockIn(text), opencodeMetaBlock.FindStringSubmatchIndex(text)
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("opencodeMetaBlockIn(%q) = %v, the pattern %v", text, got, want)
		}
	})
}

// BenchmarkOpencodeMetaBlockIn is a final's block (after 12 KB of seq
// output) found by the pattern from its tag, as findFrom ran it, and
// by opencodeMetaBlockIn.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkOpencodeMetaBlockIn
func BenchmarkOpencodeMetaBlockIn(b *testing.B) {
	text := strings.Repeat("1234\n", 2400) + "\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>"
	b.Run("pattern", func(b *testing.B) {
		for b.Loop() {
			if findFrom(opencodeMetaBlock, text, opencodeOpenTags...) == nil {
				b.Fatal()
			}
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			if opencodeMetaBlockIn(text) == nil {
				b.Fatal()
			}
		}
	})
}
