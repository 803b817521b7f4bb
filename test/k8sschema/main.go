// Command k8sschema writes the JSON schemas that kubeconform checks
// deploy/k8s against, offline, from documents the Go module proxy serves:
// the OpenAPI v2 document of one Kubernetes release
// (api/openapi-spec/swagger.json in the k8s.io/kubernetes module) and, for
// custom resources, CustomResourceDefinition files (Istio's
// kubernetes/customresourcedefinitions.gen.yaml in the istio.io/api
// module). test/setup.sh runs it; see deploy/k8s/README.md.
//
//	go run ./test/k8sschema -out DIR [-crd FILE]... SWAGGER_JSON
//
// It writes one file per kind and version, named the way kubeconform's
// -schema-location 'DIR/{{.ResourceKind}}{{.KindSuffix}}.json' looks it up
// (deployment-apps-v1.json, service-v1.json,
// destinationrule-networking-v1.json). Each file stands alone: the
// definitions it refers to are copied into it. Each is strict, like the
// "-strict" schemas kubeconform publishes: an object that lists its
// properties admits no other, so a misspelt or misplaced field fails.
// apiVersion and kind must name the file's own kind. The output is
// deterministic (sorted keys), so the same inputs give the same bytes.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kubernetes value types whose OpenAPI v2 form is narrower than what the
// API server accepts: both take a number or a string (replicas: 1 and
// maxUnavailable: "25%"; cpu: 1 and cpu: 500m).
const (
	intOrString = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	quantity    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	objectMeta  = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	refPrefix   = "#/definitions/"
)

type crdFiles []string

func (c *crdFiles) String() string     { return strings.Join(*c, ",") }
func (c *crdFiles) Set(v string) error { *c = append(*c, v); return nil }

func main() {
	out := flag.String("out", "", "directory to write the schemas into (created)")
	var crds crdFiles
	flag.Var(&crds, "crd", "a YAML file of CustomResourceDefinitions to write schemas for too (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: k8sschema -out DIR [-crd FILE]... SWAGGER_JSON")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(*out, flag.Arg(0), crds)
	if err != nil {
		fmt.Fprintf(os.Stderr, "k8sschema: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("k8sschema: wrote %d schemas into %s\n", n, *out)
}

func run(out, swaggerPath string, crds []string) (int, error) {
	defs, err := readSwagger(swaggerPath)
	if err != nil {
		return 0, err
	}
	schemas := map[string]map[string]any{} // file name -> schema
	origin := map[string]string{}          // file name -> group/version, to catch two kinds on one name
	add := func(group, version, kind string, root map[string]any, what string) error {
		name := fileName(group, version, kind)
		gv := groupVersion(group, version) + " " + kind
		if prev, ok := origin[name]; ok && prev != gv {
			return fmt.Errorf("%s and %s would both be %s", prev, gv, name)
		}
		origin[name] = gv
		props, _ := root["properties"].(map[string]any)
		if props == nil {
			return fmt.Errorf("%s: %s has no properties", what, gv)
		}
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{groupVersion(group, version)}}
		props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
		if _, ok := props["metadata"]; !ok || isOpenObject(props["metadata"]) {
			props["metadata"] = map[string]any{"$ref": refPrefix + objectMeta}
		}
		root["required"] = union(root["required"], "apiVersion", "kind")
		closure, err := definitionsOf(root, defs)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", what, gv, err)
		}
		if len(closure) > 0 {
			root["definitions"] = closure
		}
		schemas[name] = root
		return nil
	}

	for _, name := range sortedKeys(defs.raw) {
		gvks, _ := defs.raw[name]["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) != 1 { // no kind, or a type shared by every group (DeleteOptions, WatchEvent)
			continue
		}
		gvk, _ := gvks[0].(map[string]any)
		group, _ := gvk["group"].(string)
		version, _ := gvk["version"].(string)
		kind, _ := gvk["kind"].(string)
		if version == "" || kind == "" {
			return 0, fmt.Errorf("%s: incomplete x-kubernetes-group-version-kind %v", name, gvk)
		}
		root, err := convert(defs.raw[name], defs.refs)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if err := add(group, version, kind, root, swaggerPath); err != nil {
			return 0, err
		}
	}

	for _, path := range crds {
		docs, err := readCRDs(path)
		if err != nil {
			return 0, err
		}
		for _, crd := range docs {
			for _, v := range crd.versions {
				root, err := convert(v.schema, defs.refs)
				if err != nil {
					return 0, fmt.Errorf("%s: %s/%s %s: %w", path, crd.group, v.name, crd.kind, err)
				}
				if err := add(crd.group, v.name, crd.kind, root, path); err != nil {
					return 0, err
				}
			}
		}
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	for name, s := range schemas {
		b, err := json.Marshal(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return 0, err
		}
	}
	return len(schemas), nil
}

// fileName is the name kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json
// gives a kind: lower-case kind, the first label of the group, the version.
func fileName(group, version, kind string) string {
	suffix := ""
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0])
	}
	return strings.ToLower(kind) + suffix + "-" + strings.ToLower(version) + ".json"
}

func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// definitions holds the OpenAPI definitions as read and as converted.
type definitions struct {
	raw  map[string]map[string]any
	refs map[string]map[string]any // converted, filled by readSwagger
}

func readSwagger(path string) (*definitions, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Swagger     string                    `json:"swagger"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !strings.HasPrefix(doc.Swagger, "2.") || len(doc.Definitions) == 0 {
		return nil, fmt.Errorf("%s: not an OpenAPI v2 document with definitions (swagger %q)", path, doc.Swagger)
	}
	d := &definitions{raw: doc.Definitions, refs: map[string]map[string]any{}}
	for name, def := range doc.Definitions {
		switch name {
		case intOrString:
			d.refs[name] = map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}}
			continue
		case quantity:
			d.refs[name] = map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "string"}}}
			continue
		}
		c, err := convert(def, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		d.refs[name] = c
	}
	if _, ok := d.refs[objectMeta]; !ok {
		return nil, fmt.Errorf("%s: no %s", path, objectMeta)
	}
	return d, nil
}

// The JSON Schema (draft 4) keywords kept as they are. Everything else of
// OpenAPI (description, x-kubernetes-* list and patch hints, CEL rules,
// defaults) says nothing kubeconform can check and is dropped.
var plain = map[string]bool{
	"type": true, "format": true, "enum": true, "required": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "pattern": true, "minLength": true, "maxLength": true,
	"minItems": true, "maxItems": true, "uniqueItems": true,
	"minProperties": true, "maxProperties": true,
}

// convert turns one OpenAPI schema (v2 definition or a CRD's v3 structural
// schema) into a strict JSON Schema draft 4 one.
func convert(n map[string]any, refs map[string]map[string]any) (map[string]any, error) {
	if ref, ok := n["$ref"].(string); ok {
		if !strings.HasPrefix(ref, refPrefix) {
			return nil, fmt.Errorf("unsupported $ref %q", ref)
		}
		return map[string]any{"$ref": ref}, nil
	}
	if n["x-kubernetes-int-or-string"] == true || n["format"] == "int-or-string" {
		return map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}}, nil
	}
	out := map[string]any{}
	for k, v := range n {
		switch {
		case plain[k]:
			out[k] = v
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, errors.New("properties is not an object")
			}
			cp := map[string]any{}
			for name, p := range props {
				pm, ok := p.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("property %s is not a schema", name)
				}
				c, err := convert(pm, refs)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				cp[name] = c
			}
			out[k] = cp
		case k == "items" || k == "not":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s is not a single schema", k)
			}
			c, err := convert(m, refs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		case k == "additionalProperties":
			switch a := v.(type) {
			case bool:
				out[k] = a
			case map[string]any:
				c, err := convert(a, refs)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				out[k] = c
			default:
				return nil, fmt.Errorf("additionalProperties is %T", v)
			}
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s is not a list", k)
			}
			var cl []any
			for i, s := range list {
				m, ok := s.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s[%d] is not a schema", k, i)
				}
				c, err := convert(m, refs)
				if err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
				}
				cl = append(cl, c)
			}
			out[k] = cl
		}
	}
	if n["nullable"] == true {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	_, hasProps := out["properties"]
	_, hasAdditional := out["additionalProperties"]
	if hasProps && !hasAdditional && n["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out, nil
}

// isOpenObject reports whether a schema is a bare "type: object", as CRDs
// give metadata.
func isOpenObject(s any) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return false
	}
	_, props := m["properties"]
	_, ref := m["$ref"]
	return !props && !ref
}

// definitionsOf returns the converted definitions root refers to, directly
// or through one another.
func definitionsOf(root map[string]any, defs *definitions) (map[string]any, error) {
	closure := map[string]any{}
	var visit func(any) error
	visit = func(n any) error {
		switch v := n.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, refPrefix)
				if _, done := closure[name]; done {
					return nil
				}
				def, ok := defs.refs[name]
				if !ok {
					return fmt.Errorf("no definition %s", name)
				}
				closure[name] = def
				return visit(def)
			}
			for _, k := range sortedKeys(v) {
				if k == "definitions" {
					continue
				}
				if err := visit(v[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := visit(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return closure, visit(root)
}

type crd struct {
	group, kind string
	versions    []crdVersion
}

type crdVersion struct {
	name   string
	schema map[string]any
}

// readCRDs reads every served version of every CustomResourceDefinition in
// a multi-document YAML file.
func readCRDs(path string) ([]crd, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var out []crd
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Group string `yaml:"group"`
				Names struct {
					Kind string `yaml:"kind"`
				} `yaml:"names"`
				Versions []struct {
					Name   string `yaml:"name"`
					Served bool   `yaml:"served"`
					Schema struct {
						OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
					} `yaml:"schema"`
				} `yaml:"versions"`
			} `yaml:"spec"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if doc.Kind != "CustomResourceDefinition" {
			continue
		}
		c := crd{group: doc.Spec.Group, kind: doc.Spec.Names.Kind}
		for _, v := range doc.Spec.Versions {
			if !v.Served {
				continue
			}
			if v.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("%s: %s %s/%s has no openAPIV3Schema", path, c.kind, c.group, v.Name)
			}
			c.versions = append(c.versions, crdVersion{name: v.Name, schema: v.Schema.OpenAPIV3Schema})
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition", path)
	}
	return out, nil
}

func union(list any, names ...string) []any {
	var out []any
	seen := map[string]bool{}
	if l, ok := list.([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	for _, s := range names {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
