package dialect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
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
		if err == nil && fr.AgentName != "" {
			d = Detect(fr.AgentName)
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
// scan, then the decode); jsontext-scan only validates the frames with the
// one-pass decoder's tokenizer, the floor of any decode built on it;
// fastjson-parse is the floor of an index-only reader on valyala/fastjson.
func BenchmarkRead(b *testing.B) {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		d, frames, size := benchFrames(b, file)
		b.Run(name+"/dialect="+d.Info().Name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if _, err := Read(d, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/dialect="+d.Info().Name+"/encoding-json", func(b *testing.B) {
			legacyDecode = true
			defer func() { legacyDecode = false }()
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if _, err := Read(d, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/jsontext-scan", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if !jsontext.Value(f).IsValid() {
						b.Fatal("invalid frame")
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		// fastjson-parse is valyala/fastjson's parse of each frame (it
		// validates and indexes the frame without building Go values:
		// the floor of an index-only reader built on it), with one
		// Parser reused as its documentation advises.
		b.Run(name+"/fastjson-parse", func(b *testing.B) {
			var p fastjson.Parser
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if _, err := p.ParseBytes(f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		// fastjson-validate is fastjson's full validation (the parse
		// above finds each string's end but checks neither its escapes
		// nor its control characters): what the parse would need beside
		// it to refuse every frame encoding/json refuses.
		b.Run(name+"/fastjson-validate", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if err := fastjson.ValidateBytes(f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/generic-map", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					var v map[string]any
					if err := json.Unmarshal(f, &v); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
	}
}
