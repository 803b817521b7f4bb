// Package dialect reads ACP JSON-RPC frames into neutral observations.
//
// Every agent reports shell commands its own way. Each dialect lives in one
// file of this package (codex.go, claude.go, ...) and turns that agent's
// vendor fields into accum.Observation values; generic.go reads plain ACP
// plus the shared `_meta` terminal convention and the ACP v2 terminal
// updates. Nothing outside this package knows a vendor name.
//
// Frames are read in one typed pass: each frame is decoded by a single
// json.Unmarshal into a message whose update or toolCall is the dialect's
// own struct, which embeds the shared ACP shapes of acp.go and types only
// the vendor fields it reads; never through generic map[string]any trees.
package dialect

import (
	"sort"
	"strings"
)

// Auto is the dialect name that asks for detection from `initialize`.
const Auto = "auto"

// GenericName is the name of the dialect used for agents no other dialect
// claims.
const GenericName = "generic"

// Dialect reads the frames of one family of agents.
type Dialect interface {
	// Info describes the dialect.
	Info() Info
	// read is Read for this dialect; every dialect implements it as
	// readFrame(msg, scope, observeX, askX), where observeX reads the update of a
	// `session/update` notification (updates that are not about tool calls
	// or terminals give no observation) and askX, starting from askBase,
	// the toolCall of a `session/request_permission` request; an update
	// the agent sends under a method of its own is read by its update
	// type's observeUnder (methodUpdates).
	read(msg []byte, scope string) (Frame, error)
}

// Info describes a dialect.
type Info struct {
	// Name is the lowercase name clients select the dialect by.
	Name string
	// AgentNames are the `agentInfo.name` values detected as this dialect,
	// lowercase. A name matches when the agent's name equals one of them or
	// starts with it followed by one of prefixSeparators; see Detect.
	AgentNames []string
	// AuthMethodIDs are `authMethods[].id` values of an `initialize`
	// result that only this dialect's agent offers. An agent whose result
	// has no `agentInfo.name` is detected by them.
	AuthMethodIDs []string
	// MethodPrefixes are prefixes of JSON-RPC methods that only this
	// dialect's agent sends (its vendor extensions). An agent that has
	// given no name is detected by the first such request or notification.
	MethodPrefixes []string
	// ShapeRule says in words which tool call shape identifies this
	// dialect's agent when it has given no name ("" for none); the dialect
	// implements it as shapeMatcher.
	ShapeRule string
	// Summary is one line on what the dialect reads.
	Summary string
	// ClientCapabilities is the JSON `clientCapabilities` fragment that makes
	// this agent send its richest shell output.
	ClientCapabilities string
}

// richCapabilities asks for the `_meta` terminal convention and never for
// client-owned terminals.
const richCapabilities = `{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"_meta":{"terminal_output":true}}`

var registry = map[string]Dialect{}

// register adds a dialect; each dialect file calls it from init.
func register(d Dialect) {
	name := d.Info().Name
	if _, dup := registry[name]; dup {
		panic("dialect: registered twice: " + name)
	}
	registry[name] = d
	registryGen.Add(1)
}

// unregister removes a dialect (for tests that register their own).
func unregister(name string) {
	delete(registry, name)
	registryGen.Add(1)
}

// Lookup returns the dialect of that name (case-insensitive).
func Lookup(name string) (Dialect, bool) {
	d, ok := registry[strings.ToLower(strings.TrimSpace(name))]
	return d, ok
}

// Generic returns the generic dialect.
func Generic() Dialect { return registry[GenericName] }

// All returns every dialect: generic first, then the others by name.
func All() []Dialect {
	out := make([]Dialect, 0, len(registry))
	for _, d := range registry {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Info().Name, out[j].Info().Name
		if (a == GenericName) != (b == GenericName) {
			return a == GenericName
		}
		return a < b
	})
	return out
}
