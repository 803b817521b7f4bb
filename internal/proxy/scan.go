package proxy

import (
	"bytes"
	"encoding/json"
)

// envelope is what routing reads of a JSON-RPC message.
type envelope struct {
	id     string // the raw JSON of "id", "" when absent
	method string
	// paramsSession and resultSession are params.sessionId and
	// result.sessionId, when they are strings.
	paramsSession, resultSession string
}

// parse reads the envelope of a line without decoding the rest of it: it
// looks at the top-level keys of a JSON object and, inside params and
// result, at sessionId, and steps over every other value (a string by
// searching for its closing quote), so that a frame with a large output
// costs about one memchr over it. ok is false for a line that is not one
// JSON object or array (a log line an agent printed on stdout): it is
// relayed, never normalized. The engine decodes (and checks) the whole
// frame afterwards, and says what is wrong with a malformed one.
func parse(msg []byte) (env envelope, ok bool) {
	s := scanner{b: msg}
	s.space()
	switch s.peek() {
	case '[':
		// A batch, rare in ACP, or a log line in brackets ("[INFO] ...",
		// "[\x00 ...]"): checked whole, so that a line that is not JSON
		// never reaches the wire recording as a frame.
		return env, json.Valid(msg)
	case '{':
		if !s.object(func(key []byte) bool {
			switch string(key) {
			case "id":
				start := s.i
				if !s.skipValue() {
					return false
				}
				env.id = string(msg[start:s.i])
				return true
			case "method":
				env.method, _ = s.stringValue()
				return s.ok
			case "params":
				env.paramsSession = s.sessionID()
				return s.ok
			case "result":
				env.resultSession = s.sessionID()
				return s.ok
			}
			return s.skipValue()
		}) {
			return envelope{}, false
		}
	default:
		return env, false
	}
	s.space()
	return env, s.i == len(msg)
}

// scanner steps through JSON. Any malformation it meets clears ok.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// object walks the members of the object at s.i, calling member with s.i
// at each value; member must consume it.
func (s *scanner) object(member func(key []byte) bool) bool {
	s.ok = true
	s.i++ // {
	s.space()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		start := s.i
		if !s.skipString() {
			return s.fail()
		}
		key := s.b[start+1 : s.i-1]
		s.space()
		if s.peek() != ':' {
			return s.fail()
		}
		s.i++
		s.space()
		if !member(key) {
			return s.fail()
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return s.fail()
		}
	}
}

func (s *scanner) fail() bool {
	s.ok = false
	return false
}

// sessionID reads the sessionId of the object at s.i, stepping over the
// rest; "" when the value is not an object or has none.
func (s *scanner) sessionID() string {
	s.ok = true
	if s.peek() != '{' {
		s.ok = s.skipValue()
		return ""
	}
	var id string
	ok := s.object(func(key []byte) bool {
		if string(key) == "sessionId" && s.peek() == '"' {
			v, ok := s.stringValue()
			id = v
			return ok
		}
		return s.skipValue()
	})
	s.ok = ok
	return id
}

// stringValue reads the string at s.i ("" for another kind of value,
// which it steps over).
func (s *scanner) stringValue() (string, bool) {
	if s.peek() != '"' {
		s.ok = s.skipValue()
		return "", s.ok
	}
	start := s.i
	if !s.skipString() {
		return "", s.fail()
	}
	raw := s.b[start:s.i]
	if bytes.IndexByte(raw, '\\') < 0 {
		s.ok = true
		return string(raw[1 : len(raw)-1]), true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", s.fail()
	}
	s.ok = true
	return v, true
}

// skipString steps over the string at s.i.
func (s *scanner) skipString() bool {
	if s.peek() != '"' {
		return false
	}
	j := s.i + 1
	// Most strings (keys, ids, kinds) end within a few bytes: a plain loop
	// finds their end sooner than a call to IndexByte per string. A
	// backslash, or a string longer than that, goes on below.
	for end := min(len(s.b), j+32); j < end; j++ {
		if c := s.b[j]; c == '"' {
			s.i = j + 1
			return true
		} else if c == '\\' {
			break
		}
	}
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return false
		}
		j += k
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > s.i && s.b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			s.i = j
			return true
		}
	}
}

// skipValue steps over the value at s.i.
func (s *scanner) skipValue() bool {
	switch c := s.peek(); c {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 0:
		return false
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
