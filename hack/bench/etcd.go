package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// etcdUsage is what the control plane's etcd holds at one time: its
// database file's size and, by part (partOf), the live keys and the sum of
// len(key)+len(value) of the keys under /registry/. It is read from etcd
// itself, through the JSON gateway of its gRPC API that etcd serves on its
// client URL (/v3/maintenance/status, /v3/kv/range): no etcd client
// module needed.
type etcdUsage struct {
	// DbSize is the database file's size (Status.dbSize): it keeps old
	// revisions until the API server compacts them (every 5 minutes) and
	// never shrinks without a defragmentation; DbSizeInUse
	// (Status.dbSizeInUse) is the part in use.
	DbSize, DbSizeInUse int64
	// Parts are the live keys, by part.
	Parts map[string]etcdPart
	// Anatomy is, for the parts of anatomyParts, the bytes of each of
	// their JSON objects' fields, summed (anatomy).
	Anatomy map[string]map[string]int64
	// Samples holds, for the parts of anatomyParts, one object as etcd
	// stores it (the last key read), to be read beside the figures.
	Samples map[string]json.RawMessage
}

// anatomyParts are the parts whose objects the bench splits into fields:
// NonAdminBackups and Velero Backups (JSON in etcd, as every custom
// resource).
var anatomyParts = []string{"/registry/oadp.openshift.io/nonadminbackups/", "/registry/velero.io/backups/"}

// anatomy adds the bytes of the JSON object value's top-level fields to
// sums, metadata split into metadata.managedFields and the rest of
// metadata; what is not a field (braces, commas, quotes of the names) is
// "(syntax)".
func anatomy(value []byte, sums map[string]int64) {
	var top map[string]json.RawMessage
	if json.Unmarshal(value, &top) != nil {
		sums["(not JSON)"] += int64(len(value))
		return
	}
	rest := int64(len(value))
	for k, v := range top {
		rest -= int64(len(v))
		if k != "metadata" {
			sums[k] += int64(len(v))
			continue
		}
		var md map[string]json.RawMessage
		_ = json.Unmarshal(v, &md)
		mf := int64(len(md["managedFields"]))
		sums["metadata.managedFields"] += mf
		sums["metadata (other)"] += int64(len(v)) - mf
	}
	sums["(syntax)"] += rest
}

// etcdPart counts the live keys of one part and their bytes, key and
// value.
type etcdPart struct {
	Keys  int
	Bytes int64
}

// partOf returns the part of etcd key k: /registry/<group>/<resource>/ for
// an API group's (a group has a dot: oadp.openshift.io, velero.io),
// /registry/<resource>/ for the core and built-in groups the API server
// stores without their group (events, secrets, leases), except the
// Secrets of the OADP namespace (nacflow's plan store), which are
// /registry/secrets/<oadpNS>/.
func partOf(k, oadpNS string) string {
	rest, ok := strings.CutPrefix(k, "/registry/")
	if !ok {
		return "(outside /registry/)"
	}
	segs := strings.SplitN(rest, "/", 3)
	switch {
	case len(segs) < 2:
		return "/registry/" + segs[0]
	case strings.Contains(segs[0], "."):
		return "/registry/" + segs[0] + "/" + segs[1] + "/"
	case segs[0] == "secrets" && segs[1] == oadpNS:
		return "/registry/secrets/" + oadpNS + "/"
	}
	return "/registry/" + segs[0] + "/"
}

// etcdPost posts the JSON body to path of etcd's gateway at endpoint and
// decodes the answer into out.
func etcdPost(ctx context.Context, endpoint, path string, body, out any) error {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, tail(string(raw), 300))
	}
	return json.Unmarshal(raw, out)
}

// readEtcd reads the usage of the etcd at endpoint (its client URL): the
// status, then every key under /registry/ a page of 500 at a time (the
// values are read to be measured, not kept).
func readEtcd(ctx context.Context, endpoint, oadpNS string) (*etcdUsage, error) {
	var st struct {
		DbSize      string `json:"dbSize"`
		DbSizeInUse string `json:"dbSizeInUse"`
	}
	if err := etcdPost(ctx, endpoint, "/v3/maintenance/status", map[string]any{}, &st); err != nil {
		return nil, err
	}
	u := &etcdUsage{Parts: map[string]etcdPart{}, Anatomy: map[string]map[string]int64{}, Samples: map[string]json.RawMessage{}}
	for _, p := range anatomyParts {
		u.Anatomy[p] = map[string]int64{}
	}
	u.DbSize, _ = strconv.ParseInt(st.DbSize, 10, 64)
	u.DbSizeInUse, _ = strconv.ParseInt(st.DbSizeInUse, 10, 64)
	b64 := base64.StdEncoding.EncodeToString
	key, end := []byte("/registry/"), []byte("/registry0") // the prefix's range end: '/' + 1
	for {
		var page struct {
			Kvs []struct {
				Key   []byte `json:"key"` // base64 in JSON: decoded by encoding/json
				Value []byte `json:"value"`
			} `json:"kvs"`
			More bool `json:"more"`
		}
		req := map[string]any{"key": b64(key), "range_end": b64(end), "limit": 500}
		if err := etcdPost(ctx, endpoint, "/v3/kv/range", req, &page); err != nil {
			return nil, err
		}
		for _, kv := range page.Kvs {
			p := partOf(string(kv.Key), oadpNS)
			e := u.Parts[p]
			e.Keys++
			e.Bytes += int64(len(kv.Key) + len(kv.Value))
			u.Parts[p] = e
			if sums := u.Anatomy[p]; sums != nil {
				anatomy(kv.Value, sums)
				if json.Valid(kv.Value) {
					u.Samples[p] = kv.Value
				}
			}
		}
		if !page.More || len(page.Kvs) == 0 {
			return u, nil
		}
		key = append(page.Kvs[len(page.Kvs)-1].Key, 0) // just after the last key
	}
}

// EtcdGrowth is what a run added to etcd, per NAB.
type EtcdGrowth struct {
	// BytesPerNAB is the change of len(key)+len(value) of the live keys of
	// every part that changed, summed, divided by the NABs.
	BytesPerNAB float64
	// BytesPerNABByPart is that change by part (partOf), every part whose
	// bytes changed; KeysPerNABByPart the change of its keys.
	BytesPerNABByPart map[string]float64
	KeysPerNABByPart  map[string]float64
	// DbSizeDeltaPerNAB and DbSizeInUseDeltaPerNAB are the change of the
	// database file's size and of its part in use, per NAB (old
	// revisions included until compaction).
	DbSizeDeltaPerNAB, DbSizeInUseDeltaPerNAB float64
	// DbSizeMiB and DbSizeInUseMiB are the sizes after.
	DbSizeMiB, DbSizeInUseMiB float64
	// ObjectBytesByField is, for NonAdminBackups and Velero Backups
	// (anatomyParts), the mean bytes of one object's fields after:
	// metadata.managedFields, the rest of metadata, spec, status, ...
	ObjectBytesByField map[string]map[string]float64
	// SampleObjects is one object of each of anatomyParts as etcd holds it
	// after.
	SampleObjects map[string]json.RawMessage
}

// etcdGrowth returns the growth from a to b per one of n NABs.
func etcdGrowth(a, b *etcdUsage, n int) *EtcdGrowth {
	per := float64(max(n, 1))
	g := &EtcdGrowth{BytesPerNABByPart: map[string]float64{}, KeysPerNABByPart: map[string]float64{},
		DbSizeDeltaPerNAB: float64(b.DbSize-a.DbSize) / per, DbSizeInUseDeltaPerNAB: float64(b.DbSizeInUse-a.DbSizeInUse) / per,
		DbSizeMiB: float64(b.DbSize) / (1 << 20), DbSizeInUseMiB: float64(b.DbSizeInUse) / (1 << 20)}
	g.ObjectBytesByField, g.SampleObjects = map[string]map[string]float64{}, b.Samples
	for p, sums := range b.Anatomy {
		if n := b.Parts[p].Keys; n > 0 {
			g.ObjectBytesByField[p] = map[string]float64{}
			for f, v := range sums {
				g.ObjectBytesByField[p][f] = float64(v) / float64(n)
			}
		}
	}
	parts := map[string]bool{}
	for p := range a.Parts {
		parts[p] = true
	}
	for p := range b.Parts {
		parts[p] = true
	}
	for p := range parts {
		d := b.Parts[p].Bytes - a.Parts[p].Bytes
		if d == 0 {
			continue
		}
		g.BytesPerNABByPart[p] = float64(d) / per
		g.KeysPerNABByPart[p] = float64(b.Parts[p].Keys-a.Parts[p].Keys) / per
		g.BytesPerNAB += float64(d) / per
	}
	return g
}
