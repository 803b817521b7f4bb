package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/service"
	"go.yaml.in/yaml/v3"
)

// The Kubernetes manifests in deploy/k8s hold to what issue 13 and the
// README promise of them. Their schema is kubeconform's business
// (test/run.sh); this test checks what a schema cannot: the numbers, the
// hardening, and that the parts fit one another and the real binary.

const k8sDir = "../deploy/k8s"

// k8sObject is one manifest document.
type k8sObject struct {
	file string
	m    map[string]any
}

func (o k8sObject) kind() string { return ystr(o.m, "kind") }
func (o k8sObject) name() string { return ystr(o.m, "metadata", "name") }
func (o k8sObject) String() string {
	return fmt.Sprintf("%s %s (%s)", o.kind(), o.name(), filepath.Base(o.file))
}

// yget walks maps by key and lists by index ("0", "1", ...).
func yget(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func ystr(v any, path ...string) string {
	s, _ := yget(v, path...).(string)
	return s
}

func ynum(v any, path ...string) (int, bool) {
	n, ok := yget(v, path...).(int)
	return n, ok
}

func ylist(v any, path ...string) []any {
	l, _ := yget(v, path...).([]any)
	return l
}

func readK8sObjects(t *testing.T, files ...string) []k8sObject {
	t.Helper()
	var objs []k8sObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var m map[string]any
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m == nil {
				continue
			}
			objs = append(objs, k8sObject{file: f, m: m})
		}
	}
	return objs
}

// k8sManifests reads what kustomization.yaml applies, after checking that
// it names every manifest in deploy/k8s and nothing else.
func k8sManifests(t *testing.T) (map[string]k8sObject, []k8sObject) {
	t.Helper()
	kust := readK8sObjects(t, filepath.Join(k8sDir, "kustomization.yaml"))
	if len(kust) != 1 || kust[0].kind() != "Kustomization" {
		t.Fatalf("kustomization.yaml: want one Kustomization, got %d documents", len(kust))
	}
	var listed []string
	for _, r := range ylist(kust[0].m, "resources") {
		s, _ := r.(string)
		listed = append(listed, s)
	}
	onDisk, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range onDisk {
		if filepath.Base(f) != "kustomization.yaml" {
			want = append(want, filepath.Base(f))
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Fatalf("kustomization.yaml lists %v; deploy/k8s has %v (optional/ stays out)", listed, want)
	}
	var files []string
	for _, f := range listed {
		files = append(files, filepath.Join(k8sDir, f))
	}
	objs := readK8sObjects(t, files...)
	byKey := map[string]k8sObject{}
	for _, o := range objs {
		key := o.kind() + "/" + o.name()
		if _, dup := byKey[key]; dup {
			t.Fatalf("%s is defined twice", key)
		}
		byKey[key] = o
	}
	return byKey, objs
}

func k8sMustObject(t *testing.T, objs map[string]k8sObject, key string) k8sObject {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		t.Fatalf("deploy/k8s has no %s", key)
	}
	return o
}

// k8sContainer returns the pod template's container of that name.
func k8sContainer(t *testing.T, o k8sObject, name string) map[string]any {
	t.Helper()
	for _, c := range ylist(o.m, "spec", "template", "spec", "containers") {
		if ystr(c, "name") == name {
			return c.(map[string]any)
		}
	}
	t.Fatalf("%s has no container %q", o, name)
	return nil
}

func k8sEnv(c map[string]any) map[string]string {
	env := map[string]string{}
	for _, e := range ylist(c, "env") {
		env[ystr(e, "name")] = ystr(e, "value")
	}
	return env
}

// k8sSelects reports whether every label of selector is in labels.
func k8sSelects(selector, labels any) bool {
	sel, _ := selector.(map[string]any)
	lab, _ := labels.(map[string]any)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if lab[k] != v {
			return false
		}
	}
	return true
}

// k8sCheckHardened: non-root, read-only root filesystem, no capabilities, no
// privilege escalation, seccomp RuntimeDefault, no service account token,
// for every container of a workload.
func k8sCheckHardened(t *testing.T, o k8sObject) {
	t.Helper()
	pod := yget(o.m, "spec", "template", "spec")
	if yget(pod, "automountServiceAccountToken") != false {
		t.Errorf("%s: automountServiceAccountToken is not false", o)
	}
	podSC := yget(pod, "securityContext")
	if ystr(podSC, "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("%s: pod seccompProfile is not RuntimeDefault", o)
	}
	if uid, ok := ynum(podSC, "runAsUser"); ok && uid == 0 {
		t.Errorf("%s: runAsUser 0", o)
	}
	for _, c := range ylist(pod, "containers") {
		sc := yget(c, "securityContext")
		name := ystr(c, "name")
		if yget(sc, "runAsNonRoot") != true && yget(podSC, "runAsNonRoot") != true {
			t.Errorf("%s, container %s: runAsNonRoot is not true", o, name)
		}
		if uid, ok := ynum(sc, "runAsUser"); ok && uid == 0 {
			t.Errorf("%s, container %s: runAsUser 0", o, name)
		}
		if yget(sc, "readOnlyRootFilesystem") != true {
			t.Errorf("%s, container %s: readOnlyRootFilesystem is not true", o, name)
		}
		if yget(sc, "allowPrivilegeEscalation") != false {
			t.Errorf("%s, container %s: allowPrivilegeEscalation is not false", o, name)
		}
		if yget(sc, "privileged") == true {
			t.Errorf("%s, container %s: privileged", o, name)
		}
		if !slices.Contains(ylist(sc, "capabilities", "drop"), any("ALL")) || len(ylist(sc, "capabilities", "add")) > 0 {
			t.Errorf("%s, container %s: capabilities must drop ALL and add none", o, name)
		}
		for _, kind := range []string{"requests", "limits"} {
			if yget(c, "resources", kind, "memory") == nil {
				t.Errorf("%s, container %s: no resources.%s.memory", o, name, kind)
			}
		}
		if yget(c, "resources", "requests", "cpu") == nil {
			t.Errorf("%s, container %s: no resources.requests.cpu (the autoscaler measures against it)", o, name)
		}
	}
}

func TestK8sManifests(t *testing.T) {
	objs, all := k8sManifests(t)
	dep := k8sMustObject(t, objs, "Deployment/acpnormd")
	for _, o := range all {
		if o.kind() == "Deployment" || o.kind() == "StatefulSet" {
			k8sCheckHardened(t, o)
		}
	}

	// The Deployment: 3 replicas, selected by its own labels.
	if n, _ := ynum(dep.m, "spec", "replicas"); n != 3 {
		t.Errorf("%s: replicas %v, want 3", dep, yget(dep.m, "spec", "replicas"))
	}
	podLabels := yget(dep.m, "spec", "template", "metadata", "labels")
	if !k8sSelects(yget(dep.m, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("%s: selector does not select its own pods", dep)
	}
	if len(ylist(dep.m, "spec", "template", "spec", "topologySpreadConstraints")) == 0 {
		t.Errorf("%s: no topologySpreadConstraints", dep)
	}
	c := k8sContainer(t, dep, "acpnormd")
	env := k8sEnv(c)

	// It listens where its Service and probes look, on the gRPC port.
	_, port, err := net.SplitHostPort(env["ACPNORM_LISTEN"])
	if err != nil {
		t.Fatalf("%s: ACPNORM_LISTEN %q: %v", dep, env["ACPNORM_LISTEN"], err)
	}
	grpcPort, _ := strconv.Atoi(port)
	ports := map[string]int{}
	for _, p := range ylist(c, "ports") {
		n, _ := ynum(p, "containerPort")
		ports[ystr(p, "name")] = n
	}
	if ports["grpc"] != grpcPort {
		t.Errorf("%s: container port grpc is %d, ACPNORM_LISTEN says %d", dep, ports["grpc"], grpcPort)
	}
	if _, mport, err := net.SplitHostPort(env["ACPNORM_METRICS_LISTEN"]); err != nil || strconv.Itoa(ports["metrics"]) != mport {
		t.Errorf("%s: container port metrics %d does not match ACPNORM_METRICS_LISTEN %q", dep, ports["metrics"], env["ACPNORM_METRICS_LISTEN"])
	}

	// Native gRPC probes on the health service, which needs no token:
	// readiness on the whole server (""), which follows the store;
	// liveness on the service that does not, so that a Redis outage
	// restarts no pod.
	for probe, want := range map[string]string{"readinessProbe": "", "livenessProbe": service.LivenessService} {
		p, ok := ynum(c, probe, "grpc", "port")
		if !ok || p != grpcPort {
			t.Errorf("%s: %s is not a gRPC probe on port %d: %v", dep, probe, grpcPort, yget(c, probe))
		}
		if s, _ := yget(c, probe, "grpc", "service").(string); s != want {
			t.Errorf("%s: %s asks about service %q, want %q", dep, probe, s, want)
		}
	}

	// Not loopback, so TLS or a token: here the tokens file of the
	// identities (or one token) from a mounted Secret.
	tokenVar := "ACPNORM_AUTH_TOKENS_FILE"
	if env[tokenVar] == "" {
		tokenVar = "ACPNORM_AUTH_TOKEN_FILE"
	}
	tokenFile := env[tokenVar]
	if tokenFile == "" && env["ACPNORM_TLS_CERT"] == "" {
		t.Fatalf("%s listens on %s with neither a token nor TLS: acpnormd refuses to start", dep, env["ACPNORM_LISTEN"])
	}
	if tokenFile != "" {
		mounted := false
		for _, m := range ylist(c, "volumeMounts") {
			if filepath.Dir(tokenFile) != filepath.Clean(ystr(m, "mountPath")) {
				continue
			}
			for _, v := range ylist(dep.m, "spec", "template", "spec", "volumes") {
				if ystr(v, "name") == ystr(m, "name") && ystr(v, "secret", "secretName") != "" {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("%s: %s %s is not in a mounted Secret", dep, tokenVar, tokenFile)
		}
	}

	// SIGKILL only after a graceful shutdown has had its time.
	shutdown, err := time.ParseDuration(env["ACPNORM_SHUTDOWN_TIMEOUT"])
	if err != nil {
		shutdown = 10 * time.Second // serve's default
	}
	preStop, _ := ynum(c, "lifecycle", "preStop", "sleep", "seconds")
	grace, ok := ynum(dep.m, "spec", "template", "spec", "terminationGracePeriodSeconds")
	if !ok || time.Duration(grace)*time.Second <= shutdown+time.Duration(preStop)*time.Second {
		t.Errorf("%s: terminationGracePeriodSeconds %v is not above the preStop sleep (%ds) plus --shutdown-timeout (%s)", dep, yget(dep.m, "spec", "template", "spec", "terminationGracePeriodSeconds"), preStop, shutdown)
	}

	// The resources cite the section of BENCHMARKS.md that measured the
	// capacity of one replica, and that section exists.
	raw, err := os.ReadFile(dep.file)
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile(`BENCHMARKS\.md, "([^"]+)"`).FindSubmatch(raw)
	bench, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if cited == nil || !regexp.MustCompile(`(?m)^#+ `+regexp.QuoteMeta(string(cited[1]))+`$`).Match(bench) {
		t.Errorf("%s: the resources do not cite a section of BENCHMARKS.md by its heading (cited: %q)", dep, cited)
	}

	// The store is a Redis the manifests provide, on a port its Service has.
	store, err := url.Parse(env["ACPNORM_STORE"])
	if err != nil || (store.Scheme != "redis" && store.Scheme != "rediss") {
		t.Fatalf("%s: ACPNORM_STORE %q is not a redis:// or rediss:// URL", dep, env["ACPNORM_STORE"])
	}
	redisSvc := k8sMustObject(t, objs, "Service/"+store.Hostname())
	redisSet := k8sMustObject(t, objs, "StatefulSet/"+store.Hostname())
	if !k8sSelects(yget(redisSvc.m, "spec", "selector"), yget(redisSet.m, "spec", "template", "metadata", "labels")) {
		t.Errorf("%s does not select the pods of %s", redisSvc, redisSet)
	}
	if !k8sServesPort(redisSvc, store.Port()) {
		t.Errorf("%s has no port %s, which ACPNORM_STORE dials", redisSvc, store.Port())
	}
	container := "redis"
	if store.Query().Has("master_name") {
		container = "sentinel"
	}
	if img := ystr(k8sContainer(t, redisSet, container), "image"); !strings.HasPrefix(img, "redis:7") {
		t.Errorf("%s: image %q, want redis:7", redisSet, img)
	}
	// A Sentinel URL: the Sentinels monitor the master by the URL's
	// master_name, with a quorum of a majority of them, and the Redis
	// they watch has the replicas ACPNORM_STORE_WAIT_REPLICAS waits for,
	// and one more to be left after a promotion.
	wait, err := strconv.Atoi(env["ACPNORM_STORE_WAIT_REPLICAS"])
	if err != nil {
		wait = 0
	}
	if name := store.Query().Get("master_name"); name != "" {
		var args []string
		for _, a := range ylist(k8sContainer(t, redisSet, "sentinel"), "args") {
			if a, ok := a.(string); ok {
				args = append(args, a)
			}
		}
		script := strings.Join(args, "\n")
		m := regexp.MustCompile(`sentinel monitor ` + regexp.QuoteMeta(name) + ` \S+ 6379 (\d+)`).FindStringSubmatch(script)
		if m == nil {
			t.Fatalf("%s does not monitor a master named %q: %s", redisSet, name, script)
		}
		sentinels, _ := ynum(redisSet.m, "spec", "replicas")
		if q, _ := strconv.Atoi(m[1]); q*2 <= sentinels || q > sentinels {
			t.Errorf("%s: quorum %d of %d Sentinels; want a majority", redisSet, q, sentinels)
		}
		data := k8sMustObject(t, objs, "StatefulSet/acpnorm-redis")
		if img := ystr(k8sContainer(t, data, "redis"), "image"); !strings.HasPrefix(img, "redis:7") {
			t.Errorf("%s: image %q, want redis:7", data, img)
		}
		if n, _ := ynum(data.m, "spec", "replicas"); n < wait+2 {
			t.Errorf("%s: %d pods, a master and %d replicas; ACPNORM_STORE_WAIT_REPLICAS=%d wants %d replicas, and one more for after a promotion", data, n, n-1, wait, wait+1)
		}
	} else if wait > 0 {
		t.Errorf("%s: ACPNORM_STORE_WAIT_REPLICAS=%d with a Redis that has no replicas: every frame would be refused", dep, wait)
	}

	// Services: the ClusterIP one carries gRPC, marked as such.
	svc := k8sMustObject(t, objs, "Service/acpnorm")
	if !k8sSelects(yget(svc.m, "spec", "selector"), podLabels) {
		t.Errorf("%s does not select acpnormd's pods", svc)
	}
	grpcOK := false
	for _, p := range ylist(svc.m, "spec", "ports") {
		if ystr(p, "appProtocol") == "grpc" && (ystr(p, "targetPort") == "grpc" || yget(p, "targetPort") == grpcPort) {
			grpcOK = true
		}
	}
	if !grpcOK {
		t.Errorf("%s has no port with appProtocol grpc targeting the gRPC port", svc)
	}

	// PodDisruptionBudget: never more than one replica of three away.
	pdb := k8sMustObject(t, objs, "PodDisruptionBudget/acpnormd")
	if !k8sSelects(yget(pdb.m, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("%s does not select acpnormd's pods", pdb)
	}
	minAvail, hasMin := ynum(pdb.m, "spec", "minAvailable")
	maxUnavail, hasMax := ynum(pdb.m, "spec", "maxUnavailable")
	if !(hasMin && minAvail == 2) && !(hasMax && maxUnavail == 1) {
		t.Errorf("%s: want minAvailable 2 or maxUnavailable 1, got %v", pdb, yget(pdb.m, "spec"))
	}

	// HorizontalPodAutoscaler on CPU, never below the 3 replicas.
	hpa := k8sMustObject(t, objs, "HorizontalPodAutoscaler/acpnormd")
	if ystr(hpa.m, "apiVersion") != "autoscaling/v2" {
		t.Errorf("%s: apiVersion %q, want autoscaling/v2", hpa, ystr(hpa.m, "apiVersion"))
	}
	if ystr(hpa.m, "spec", "scaleTargetRef", "kind") != "Deployment" || ystr(hpa.m, "spec", "scaleTargetRef", "name") != dep.name() {
		t.Errorf("%s does not scale %s", hpa, dep)
	}
	minR, _ := ynum(hpa.m, "spec", "minReplicas")
	maxR, _ := ynum(hpa.m, "spec", "maxReplicas")
	if minR != 3 || maxR <= minR {
		t.Errorf("%s: minReplicas %d, maxReplicas %d; want 3 and more", hpa, minR, maxR)
	}
	cpu := false
	for _, m := range ylist(hpa.m, "spec", "metrics") {
		if ystr(m, "type") == "Resource" && ystr(m, "resource", "name") == "cpu" && ystr(m, "resource", "target", "type") == "Utilization" {
			cpu = true
		}
	}
	if !cpu {
		t.Errorf("%s has no CPU utilization metric", hpa)
	}

	// The optional sticky route hashes the acpnorm-session header of the
	// acpnorm Service's streams on a ring.
	dr := readK8sObjects(t, filepath.Join(k8sDir, "optional", "istio-destinationrule.yaml"))
	if len(dr) != 1 || dr[0].kind() != "DestinationRule" {
		t.Fatalf("optional/istio-destinationrule.yaml: want one DestinationRule")
	}
	hash := yget(dr[0].m, "spec", "trafficPolicy", "loadBalancer", "consistentHash")
	if ystr(hash, "httpHeaderName") != "acpnorm-session" || yget(hash, "ringHash") == nil {
		t.Errorf("%s: want consistentHash on the acpnorm-session header with ringHash, got %v", dr[0], hash)
	}
	if host := ystr(dr[0].m, "spec", "host"); host != svc.name() && !strings.HasPrefix(host, svc.name()+".") {
		t.Errorf("%s: host %q is not the %s Service", dr[0], host, svc.name())
	}
}

func k8sServesPort(svc k8sObject, port string) bool {
	for _, p := range ylist(svc.m, "spec", "ports") {
		if n, _ := ynum(p, "port"); strconv.Itoa(n) == port {
			return true
		}
	}
	return false
}

// TestK8sDeploymentEnvIsServes: every ACPNORM_* variable the Deployment
// sets is one that the real acpnormd serve reads, and its value parses (a
// misspelt name would be silently ignored in the cluster).
func TestK8sDeploymentEnvIsServes(t *testing.T) {
	objs, _ := k8sManifests(t)
	env := k8sEnv(k8sContainer(t, k8sMustObject(t, objs, "Deployment/acpnormd"), "acpnormd"))
	bin := buildCLI(t)
	cmd := exec.Command(bin, "serve", "-h")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpnormd serve -h with the Deployment's environment: %v\n%s%s", err, out.String(), errOut.String())
	}
	for k := range env {
		if !strings.HasPrefix(k, "ACPNORM_") {
			continue
		}
		if !strings.Contains(out.String(), "(env "+k+")") {
			t.Errorf("the Deployment sets %s, which acpnormd serve does not read (serve -h lists no \"(env %s)\")", k, k)
		}
	}
}
