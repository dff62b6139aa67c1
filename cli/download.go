package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// timeoutEnvVar is OADP's CLI variable for the download wait
// (migtools/oadp-cli's OADP_CLI_REQUEST_TIMEOUT).
const timeoutEnvVar = "OADP_CLI_REQUEST_TIMEOUT"

// defaultDownloadTimeout bounds the wait for a download URL and the download.
const defaultDownloadTimeout = 5 * time.Minute

// downloadOptions are the flags of commands that read a Velero file.
type downloadOptions struct {
	timeout time.Duration
	caCert  string
}

func addDownloadFlags(cmd *cobra.Command) *downloadOptions {
	d := &downloadOptions{timeout: defaultDownloadTimeout}
	if v, err := time.ParseDuration(os.Getenv(timeoutEnvVar)); err == nil && v > 0 {
		d.timeout = v
	}
	cmd.Flags().DurationVar(&d.timeout, "timeout", d.timeout, "How long to wait for Velero to serve the file and to download it ($"+timeoutEnvVar+" sets the default).")
	cmd.Flags().StringVar(&d.caCert, "cacert", "", "CA bundle to trust for the object store's download URL (Velero's --cacert).")
	return d
}

// Download fetches a Velero file of a NonAdminBackup or NonAdminRestore the
// way a tenant may (DownloadTo) and returns it gunzipped when gzipped
// (Velero stores its files gzipped). Errors: DownloadTo's.
func (o *Options) Download(ctx context.Context, c client.Client, ns string, kind velerov1.DownloadTargetKind, target string, d *downloadOptions) ([]byte, error) {
	b := &cappedBuffer{max: maxInMemory}
	err := o.DownloadTo(ctx, c, ns, kind, target, d, b, true)
	return b.buf.Bytes(), err
}

// maxInMemory bounds what Download holds in memory, in uncompressed bytes:
// the resource list of a backup of 100,000 items is a few MiB, but the
// tenant's bucket may hold anything under that name (a gzip bomb expands a
// thousandfold).
const maxInMemory = 64 << 20

// cappedBuffer is a bytes.Buffer that refuses to grow past max bytes.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

// Write implements io.Writer: it fails, writing nothing, once p would take
// the buffer past max.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		return 0, fmt.Errorf("the file is over %d bytes uncompressed, more than is read into memory (`backup download` saves a file whole)", b.max)
	}
	return b.buf.Write(p)
}

// DownloadTo creates a NonAdminDownloadRequest for kind (BackupLog,
// BackupResourceList, BackupContents, RestoreLog, …) and target (the NAC
// object's name) in ns, waits for its download URL and streams the file to
// w, gunzipped when gunzip is set and the file is gzip; the request is
// deleted on the way out, whatever happens. Errors: the request refused
// (Accepted=False: its message), no URL within the timeout, an HTTP status
// other than 200, w's.
func (o *Options) DownloadTo(ctx context.Context, c client.Client, ns string, kind velerov1.DownloadTargetKind, target string, d *downloadOptions, w io.Writer, gunzip bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req := &v1alpha1.NonAdminDownloadRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: downloadName(target, kind)},
		Spec:       v1alpha1.NonAdminDownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: kind, Name: target}},
	}
	if err := c.Create(ctx, req); err != nil {
		return fmt.Errorf("creating a NonAdminDownloadRequest for %s of %s: %w", kind, target, err)
	}
	defer func() {
		cleanup, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		_ = client.IgnoreNotFound(c.Delete(cleanup, req))
	}()
	url, err := o.waitForURL(ctx, c, req)
	if err != nil {
		return err
	}
	return fetch(ctx, url, d.caCert, w, gunzip)
}

// downloadName is the request's generateName: "<target>-<kind>-", cut to
// leave room for the generated suffix.
func downloadName(target string, kind velerov1.DownloadTargetKind) string {
	name := strings.ToLower(target + "-" + string(kind))
	if len(name) > 57 {
		name = name[:57]
	}
	return strings.TrimRight(name, "-.") + "-"
}

func (o *Options) waitForURL(ctx context.Context, c client.Client, req *v1alpha1.NonAdminDownloadRequest) (string, error) {
	tick := time.NewTicker(o.PollInterval)
	defer tick.Stop()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(req), req); err != nil {
			if ctx.Err() != nil {
				return "", o.downloadTimeout(req)
			}
			return "", fmt.Errorf("reading NonAdminDownloadRequest %s: %w", req.Name, err)
		}
		if s := req.Status.VeleroDownloadRequest.Status; s != nil && s.DownloadURL != "" {
			return s.DownloadURL, nil
		}
		if a := apimeta.FindStatusCondition(req.Status.Conditions, v1alpha1.ConditionAccepted); a != nil && a.Status == metav1.ConditionFalse {
			return "", fmt.Errorf("NonAdminDownloadRequest %s was refused (%s): %s", req.Name, a.Reason, a.Message)
		}
		if p := req.Status.Plan; p != nil && p.State == v1alpha1.PlanFailed {
			return "", fmt.Errorf("NonAdminDownloadRequest %s: %s", req.Name, failedPhase(p))
		}
		select {
		case <-ctx.Done():
			return "", o.downloadTimeout(req)
		case <-tick.C:
		}
	}
}

func (o *Options) downloadTimeout(req *v1alpha1.NonAdminDownloadRequest) error {
	where := "no plan yet: is the nacflow controller running?"
	if p := req.Status.Plan; p != nil {
		where = or(p.Current, string(p.State))
		if ph := p.Phase(strings.SplitN(p.Current, ":", 2)[0]); ph != nil && ph.Message != "" {
			where += " (" + ph.Message + ")"
		}
	}
	return fmt.Errorf("timed out waiting for the download URL of NonAdminDownloadRequest %s: %s", req.Name, where)
}

// fetch GETs url and streams its body to w, gunzipped when gunzip is set
// and the body is gzip (by its magic bytes, as Velero's and OADP's CLIs
// do). Errors: the HTTP client's, a status other than 200, gzip's, w's.
func fetch(ctx context.Context, url, caCert string, w io.Writer, gunzip bool) error {
	hc := &http.Client{}
	if caCert != "" {
		pem, err := os.ReadFile(caCert)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--cacert %s: no PEM certificate found", caCert)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("downloading: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("downloading: the object store answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	br := bufio.NewReader(resp.Body)
	var r io.Reader = br
	if magic, err := br.Peek(2); gunzip && err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gunzipping: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("downloading: %w", err)
	}
	return nil
}

// resourceDetails reads Velero's resource list of a backup or restore
// through a download request; a failure is kept as the reason it is
// missing (describe still prints the rest).
func (o *Options) resourceDetails(ctx context.Context, c client.Client, ns string, kind velerov1.DownloadTargetKind, target string, d *downloadOptions) *Details {
	data, err := o.Download(ctx, c, ns, kind, target, d)
	if err != nil {
		return &Details{Unavailable: err.Error()}
	}
	res := map[string][]string{}
	if err := json.Unmarshal(data, &res); err != nil {
		return &Details{Unavailable: fmt.Sprintf("Velero's %s is not a resource list: %v", kind, err)}
	}
	return &Details{Resources: res}
}

// backupDownloadKinds are the files of a backup `backup download --kind`
// fetches, and the suffix of the default file name for each (Velero's
// `backup download` writes <backup>-data.tar.gz for the contents).
var backupDownloadKinds = map[velerov1.DownloadTargetKind]string{
	velerov1.DownloadTargetKindBackupContents:           "data.tar.gz",
	velerov1.DownloadTargetKindBackupLog:                "logs.gz",
	velerov1.DownloadTargetKindBackupResourceList:       "resource-list.json.gz",
	velerov1.DownloadTargetKindBackupVolumeSnapshots:    "volumesnapshots.json.gz",
	velerov1.DownloadTargetKindBackupItemOperations:     "itemoperations.json.gz",
	velerov1.DownloadTargetKindCSIBackupVolumeSnapshots: "csi-volumesnapshots.json.gz",
	velerov1.DownloadTargetKindBackupResults:            "results.gz",
	velerov1.DownloadTargetKindBackupVolumeInfos:        "volumeinfo.json.gz",
}

// newBackupDownloadCommand is `backup download NAME`: one file of the
// backup (--kind, its contents by default), as Velero stores it (gzipped),
// written to -o FILE (default <NAME>-<file>, Velero's names; - for
// standard output) through a NonAdminDownloadRequest, deleted afterwards.
func newBackupDownloadCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminBackup]) *cobra.Command {
	var kind, output string
	var force bool
	var d *downloadOptions
	cmd := k.verb(o, "download NAME", cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		target := velerov1.DownloadTargetKind(kind)
		suffix, ok := backupDownloadKinds[target]
		if !ok {
			return fmt.Errorf("--kind %q: a backup's files are %s", kind, strings.Join(downloadKindNames(), ", "))
		}
		nab := &v1alpha1.NonAdminBackup{}
		c, err := o.getTenantObject(cmd, args[0], nab)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(output); output == "" || (err == nil && fi.IsDir()) {
			output = filepath.Join(output, nab.Name+"-"+suffix)
		}
		var w io.Writer = o.Out
		if output != "-" {
			flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
			if !force {
				flags |= os.O_EXCL
			}
			f, err := os.OpenFile(output, flags, 0o600)
			if err != nil {
				if os.IsExist(err) {
					return fmt.Errorf("%s exists: use --force to overwrite it", output)
				}
				return err
			}
			defer f.Close()
			w = f
		}
		if err := o.DownloadTo(cmd.Context(), c, nab.Namespace, target, nab.Name, d, w, false); err != nil {
			if output != "-" {
				_ = os.Remove(output)
			}
			return err
		}
		if output != "-" {
			fmt.Fprintf(o.Out, "%s of NonAdminBackup %s written to %s.\n", target, nab.Name, output)
		}
		return nil
	})
	fl := cmd.Flags()
	fl.StringVar(&kind, "kind", string(velerov1.DownloadTargetKindBackupContents), "The file of the backup: "+strings.Join(downloadKindNames(), ", ")+".")
	fl.StringVarP(&output, "output", "o", "", "The file to write, or a directory to write it in (default <NAME>-data.tar.gz and Velero's other names, in the current directory; - for standard output).")
	fl.BoolVar(&force, "force", false, "Overwrite the file when it exists.")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(downloadKindNames(), cobra.ShellCompDirectiveNoFileComp))
	d = addDownloadFlags(cmd)
	return cmd
}

// downloadKindNames are backupDownloadKinds' names, sorted.
func downloadKindNames() []string {
	var out []string
	for k := range backupDownloadKinds {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}
