package dialect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/acpnorm/acpnorm/internal/gcpace"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fastjson"
)

// benchFrames returns the agent->client frames of a recording and the
// dialect its initialize result names.
func benchFrames(b *testing.B, file string) (Dialect, [][]byte, int64) {
	b.Helper()
	fh, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	d := Generic()
	var frames [][]byte
	var size int64
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			b.Fatal(err)
		}
		if line.Dir != "agent->client" {
			continue
		}
		fr, err := Read(d, line.Msg)
		switch {
		case err != nil:
		case fr.AgentName != "":
			d = Detect(fr.AgentName)
		case fr.Sign != "" && d.Info().Name == Generic().Info().Name:
			// An agent without a name (Grok) is known by its sign, as
			// the engine knows it.
			if s, ok := Lookup(fr.Sign); ok {
				d = s
			}
		}
		frames = append(frames, line.Msg)
		size += int64(len(line.Msg))
	}
	return d, frames, size
}

// BenchmarkRead holds the cost of reading a recording's frames with its
// dialect (one typed pass) against encoding/json's generic decode of the
// same frames into map[string]any, which is what a client that reads
// vendor fields by hand would do before it even starts to interpret them.
// One op reads every agent->client frame of the recording once.
// encoding-json is the same read with encoding/json alone (its validation
// scan, then the decode); acpnormd-gc the same read with the collector
// paced as acpnormd paces it; jsontext-scan only validates the frames with the
// one-pass decoder's tokenizer, the floor of any decode built on it;
// fastjson-parse is the floor of an index-only reader on valyala/fastjson.
func BenchmarkRead(b *testing.B) {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		d, frames, size := benchFrames(b, file)
		read := func(f []byte) error { _, err := Read(d, f); return err }
		var p fastjson.Parser // reused, as fastjson's documentation advises
		for _, c := range []struct {
			name   string
			legacy bool
			read   func([]byte) error
			floor  bool // the collector paced as acpnormd paces it
		}{
			{name: "dialect=" + d.Info().Name, read: read},
			{name: "dialect=" + d.Info().Name + "/encoding-json", legacy: true, read: read},
			// acpnormd-gc is the dialect's read with the collector paced as
			// acpnormd paces it by default (--gc-floor, gcpace.DefaultFloor):
			// the row above charges Read with Go's default pacing, a
			// collection each time this benchmark's small heap doubles,
			// which the scan (it allocates nothing) does not pay.
			{name: "dialect=" + d.Info().Name + "/acpnormd-gc", read: read, floor: true},
			{name: "jsontext-scan", read: scanFrame},
			// fastjson-parse indexes the frame without building Go
			// values (the floor of an index-only reader built on it); it
			// checks the structure, but neither a string's escapes nor
			// its control characters.
			{name: "fastjson-parse", read: func(f []byte) error { _, err := p.ParseBytes(f); return err }},
			// fastjson-validate is its full validation: what the parse
			// would need beside it to refuse every frame encoding/json
			// refuses.
			{name: "fastjson-validate", read: fastjson.ValidateBytes},
			{name: "generic-map", read: func(f []byte) error { var v map[string]any; return json.Unmarshal(f, &v) }},
		} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				jsonlit.SetEncodingJSONOnly(c.legacy)
				defer jsonlit.SetEncodingJSONOnly(false)
				if c.floor {
					runtime.GC() // what the rows before left is not this row's
					defer gcpace.Start(gcpace.DefaultFloor).Stop()
				}
				readEach(b, size, frames, c.read)
			})
		}
	}
}

// BenchmarkReadBySize is BenchmarkRead over three classes of each
// recording's frames, to show where Read's cost above the scan lies:
// "quiet" the frames quietFrame skips, "typed" the other frames under
// 16 KiB (jsonlit's default for the smallest frame the elided decode
// walks: each is decoded by the typed decode alone) and "walked" the
// frames of 16 KiB or more. Each class has its dialect row and its
// jsontext-scan row; one op reads the class's frames once.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkReadBySize -benchtime 100x
func BenchmarkReadBySize(b *testing.B) {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		d, frames, _ := benchFrames(b, file)
		classes := map[string][][]byte{}
		sizes := map[string]int64{}
		for _, f := range frames {
			class := "typed"
			switch {
			case skipped(f):
				class = "quiet"
			case len(f) >= 16<<10:
				class = "walked"
			}
			classes[class] = append(classes[class], f)
			sizes[class] += int64(len(f))
		}
		for _, class := range []string{"quiet", "typed", "walked"} {
			fs := classes[class]
			if len(fs) == 0 {
				continue
			}
			b.Run(name+"/"+class+"/dialect", func(b *testing.B) {
				readEach(b, sizes[class], fs, func(f []byte) error { _, err := Read(d, f); return err })
			})
			b.Run(name+"/"+class+"/jsontext-scan", func(b *testing.B) {
				readEach(b, sizes[class], fs, scanFrame)
			})
		}
	}
}

// BenchmarkReadByteArray reads one Grok update whose rawOutput.output is
// a 150 KiB output as a JSON array of byte values (grok-bytes of
// bench/run.sh, at its final size) with the grok dialect: "one-scan" as
// Read does it (the elided decode validates and decodes the array in one
// scan of its own), "decoder" with elision off (the one-pass decoder's
// tokenizer reads the array, then rawBytes scans it again). The memo is
// off: through it, the same frame read again would be compared with the
// one before it rather than decoded (what that saves on re-sent arrays is
// normalize's BenchmarkCumulative, grok-bytes).
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkReadByteArray -benchmem
func BenchmarkReadByteArray(b *testing.B) {
	defer jsonlit.SetMemoSizes(math.MaxInt, math.MaxInt)() // no array is kept
	out := []byte(strings.Repeat("step 00001: compiled package/001 in 37 ms\n", 150<<10/42))
	arr := jsonlit.AppendByteArray(nil, out)
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","rawOutput":{"output":` + string(arr) + `,"exit_code":0,"truncated":false}}}}`)
	g, ok := Lookup("grok")
	if !ok {
		b.Fatal("no grok dialect")
	}
	for _, c := range []struct {
		name    string
		decoder bool
	}{{"one-scan", false}, {"decoder", true}} {
		b.Run(c.name, func(b *testing.B) {
			if c.decoder {
				defer jsonlit.SetElideSizes(math.MaxInt, 0)() // no frame is walked
			}
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				f, err := Read(g, msg)
				if err != nil || len(f.Observations) != 1 || !bytes.Equal(f.Observations[0].Texts[0].Bytes, out) {
					b.Fatalf("read %+v, %v", f, err)
				}
			}
			benchcpu.Report(b, cpu)
		})
	}
}

// BenchmarkReadQuiet reads the frames of every recording (those of
// recordings/agents too, Qwen's ~570 KB command list among them) that
// quietFrame skips, each with its recording's dialect, in two classes:
// "updates" the session/updates of a quiet kind, "methods" the messages
// of an agent's own methods (Grok's _x.ai/ notifications). Each class has
// the rows "prescan" as Read does it, "full" with the typed decode
// quietFrame saves, and jsontext-scan, the floor, as in BenchmarkRead.
// One op reads the class's frames once.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkReadQuiet -benchtime 200x
func BenchmarkReadQuiet(b *testing.B) {
	frames := map[string][]dialectFrame{}
	size := map[string]int64{}
	for _, f := range dialectFrames(b, "*.ndjson", "agents/*.ndjson") {
		class := "updates"
		if sign, quiet := quietFrame(f.msg); !quiet {
			continue
		} else if sign != "" {
			class = "methods"
		}
		frames[class] = append(frames[class], f)
		size[class] += int64(len(f.msg))
	}
	for _, class := range []string{"updates", "methods"} {
		b.Logf("%s: %d frames, %d bytes", class, len(frames[class]), size[class])
		for _, c := range []struct {
			name string
			full bool
			read func(dialectFrame) error
		}{{"prescan", false, dialectFrame.read}, {"full", true, dialectFrame.read}, {"jsontext-scan", false, dialectFrame.scan}} {
			b.Run(class+"/"+c.name, func(b *testing.B) {
				noPrescan.Store(c.full)
				defer noPrescan.Store(false)
				readEach(b, size[class], frames[class], c.read)
			})
		}
	}
}

// BenchmarkReadMarks reads every frame of every recording with its
// dialect, as Read does ("marks": the unrecognized walk starts from where
// the fast decode found the update's rawOutput and _meta) and with the
// walk finding them itself ("walk"), and jsontext-scan, the floor. One op
// reads every frame once.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkReadMarks -benchtime 100x
func BenchmarkReadMarks(b *testing.B) {
	frames := dialectFrames(b, "*.ndjson")
	var size int64
	for _, f := range frames {
		size += int64(len(f.msg))
	}
	for _, c := range []struct {
		name string
		walk bool
		read func(dialectFrame) error
	}{{"marks", false, dialectFrame.read}, {"walk", true, dialectFrame.read}, {"jsontext-scan", false, dialectFrame.scan}} {
		b.Run(c.name, func(b *testing.B) {
			noMarks.Store(c.walk)
			defer noMarks.Store(false)
			readEach(b, size, frames, c.read)
		})
	}
}

// dialectFrame is a recorded frame and the dialect of its recording.
type dialectFrame struct {
	d   Dialect
	msg []byte
}

func (f dialectFrame) read() error { _, err := Read(f.d, f.msg); return err }
func (f dialectFrame) scan() error { return scanFrame(f.msg) }

// dialectFrames returns the agent->client frames (benchFrames) of the
// recordings under test/testdata/recordings that match the patterns.
func dialectFrames(b *testing.B, patterns ...string) []dialectFrame {
	var out []dialectFrame
	for _, pattern := range patterns {
		files, _ := filepath.Glob(filepath.Join("../../test/testdata/recordings", pattern))
		for _, file := range files {
			d, fs, _ := benchFrames(b, file)
			for _, f := range fs {
				out = append(out, dialectFrame{d, f})
			}
		}
	}
	return out
}

// scanFrame validates f with the one-pass decoder's tokenizer: the
// jsontext-scan rows, the floor of any decode built on it.
func scanFrame(f []byte) error {
	if !jsontext.Value(f).IsValid() {
		return errors.New("invalid frame")
	}
	return nil
}

// readEach reads every frame with read once per op, reporting size bytes
// per op, the allocations and the CPU time.
func readEach[F any](b *testing.B, size int64, frames []F, read func(F) error) {
	b.SetBytes(size)
	b.ReportAllocs()
	cpu := benchcpu.Now()
	for b.Loop() {
		for _, f := range frames {
			if err := read(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchcpu.Report(b, cpu)
}

// BenchmarkAnchored tries Claude Code's empty-result notice (claudeNoOutput)
// and OpenCode's truncation header (opencodeTruncHeader), which the
// dialects try on every output text, on command outputs that are
// neither, as the regexp alone and guarded by the first bytes a match can
// start with (anchored); and the header on OpenCode's live windows, which
// start with "...\n\n" as the header does, so that only its first-line
// literal (withLine) skips them.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkAnchored
func BenchmarkAnchored(b *testing.B) {
	var seq strings.Builder
	for i := 1; seq.Len() < 64<<10; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	for _, size := range []int{64, 1 << 10, 64 << 10} {
		text := seq.String()[:size]
		for _, g := range []struct {
			name, text string
			a          *anchored
		}{
			{"claudeNoOutput", text, claudeNoOutput},
			{"opencodeTruncHeader", text, opencodeTruncHeader},
			{"opencodeTruncHeader-window", opencodeWindowPrefix + text, opencodeTruncHeader},
		} {
			a, text, name := g.a, g.text, fmt.Sprintf("%s/%d", g.name, size)
			b.Run(name+"/regexp", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if a.Regexp.FindStringIndex(text) != nil {
						b.Fatal("matched")
					}
				}
			})
			b.Run(name+"/anchored", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if a.FindStringIndex(text) != nil {
						b.Fatal("matched")
					}
				}
			})
		}
	}
}

// BenchmarkFolded tries OpenCode's note regexps (folded) on the notes
// its recordings hold: each note matches one and not the other, which the
// regexp alone steps through the whole note to find out.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkFolded
func BenchmarkFolded(b *testing.B) {
	for _, n := range []struct{ name, note string }{
		{"timeout", "shell tool terminated command after exceeding timeout 2000 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds."},
		{"abort", "User aborted the command"},
	} {
		name, note := n.name, n.note
		for _, f := range []struct {
			name string
			re   *folded
		}{{"opencodeTimeoutText", opencodeTimeoutText}, {"opencodeAbortText", opencodeAbortText}} {
			want := f.re.Regexp.MatchString(note)
			b.Run(name+"/"+f.name+"/regexp", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if f.re.Regexp.MatchString(note) != want {
						b.Fatal("wrong")
					}
				}
			})
			b.Run(name+"/"+f.name+"/folded", func(b *testing.B) {
				defer benchcpu.Report(b, benchcpu.Now())
				for b.Loop() {
					if f.re.MatchString(note) != want {
						b.Fatal("wrong")
					}
				}
			})
		}
	}
}

// BenchmarkReadFastTypes reads the recorded frames that hold the values
// whose types read themselves in the fast decoder's pass (askOptions,
// authMethodIDs, CommandLine, rawBytes), each with its recording's
// dialect, in three classes: "asks" the permission asks (their options),
// "initialize" the initialize results (their authMethods), "commands" the
// other frames with a `"command"` member (rawInput's, mostly). Each class
// has its dialect row and its jsontext-scan row; one op reads the class's
// frames once.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkReadFastTypes -benchtime 2000x
func BenchmarkReadFastTypes(b *testing.B) {
	frames := map[string][]dialectFrame{}
	size := map[string]int64{}
	for _, f := range dialectFrames(b, "*.ndjson") {
		var class string
		switch {
		case bytes.Contains(f.msg, []byte(`"session/request_permission"`)):
			class = "asks"
		case bytes.Contains(f.msg, []byte(`"authMethods"`)):
			class = "initialize"
		case bytes.Contains(f.msg, []byte(`"command"`)):
			class = "commands"
		default:
			continue
		}
		frames[class] = append(frames[class], f)
		size[class] += int64(len(f.msg))
	}
	for _, class := range []string{"asks", "initialize", "commands"} {
		b.Logf("%s: %d frames, %d bytes", class, len(frames[class]), size[class])
		for _, c := range []struct {
			name string
			read func(dialectFrame) error
		}{{"dialect", dialectFrame.read}, {"jsontext-scan", dialectFrame.scan}} {
			b.Run(class+"/"+c.name, func(b *testing.B) {
				readEach(b, size[class], frames[class], c.read)
			})
		}
	}
}
