package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Narrow unit tests of the commands over the fake client: what each writes.
// test/e2e runs the built plugin against the real stack.
type CommandsSuite struct{}

var _ = Suite(&CommandsSuite{})

// run runs kubectl nac args in namespace demo over o.
func run(o *Options, args ...string) (int, error) {
	o.ConfigFlags.Namespace = ptr.To("demo")
	return ExitCode(context.Background(), o, args), nil
}

func (s *CommandsSuite) TestBackupCreateBuildsTheSpec(c *C) {
	o, out, errOut := testOptions(c)
	code, _ := run(o, "backup", "create", "b1", "--include-resources", "configmaps,secrets", "--exclude-resources", "pods",
		"--ttl", "72h", "--storage-location", "mine", "-l", "app=web", "--snapshot-volumes", "--labels", "team=a")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Matches, `(?s)NonAdminBackup request "b1" submitted successfully.\n.*`)
	nab := &v1alpha1.NonAdminBackup{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b1"}, nab), IsNil)
	spec := nab.Spec.BackupSpec
	c.Check(spec.IncludedNamespaces, DeepEquals, []string{"demo"})
	c.Check(spec.IncludedResources, DeepEquals, []string{"configmaps", "secrets"})
	c.Check(spec.ExcludedResources, DeepEquals, []string{"pods"})
	c.Check(spec.TTL.Duration.String(), Equals, "72h0m0s")
	c.Check(spec.StorageLocation, Equals, "mine")
	c.Check(metav1.FormatLabelSelector(spec.LabelSelector), Equals, "app=web")
	c.Check(*spec.SnapshotVolumes, Equals, true)
	c.Check(spec.SnapshotMoveData, IsNil)
	c.Check(nab.Labels, DeepEquals, map[string]string{"team": "a"})
}

func (s *CommandsSuite) TestCreateWithOutputCreatesNothing(c *C) {
	o, out, _ := testOptions(c)
	code, _ := run(o, "backup", "create", "b1", "-o", "yaml")
	c.Assert(code, Equals, 0)
	c.Check(out.String(), Matches, `(?s)apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\n.*includedNamespaces:\n    - demo\n.*`)
	err := o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b1"}, &v1alpha1.NonAdminBackup{})
	c.Check(apierrors.IsNotFound(err), Equals, true)
}

// TestRestoreIntoAnotherNamespaceWithModifiers: --namespace-mapping and
// --resource-modifier (and Velero's names for them) set the restore's
// namespaceMapping and a ConfigMap of this namespace; describe shows both.
func (s *CommandsSuite) TestRestoreIntoAnotherNamespaceWithModifiers(c *C) {
	for _, args := range [][]string{
		{"restore", "create", "r1", "--from-backup", "b1", "--namespace-mapping", "demo:demo-copy", "--resource-modifier", "my-modifiers"},
		{"restore", "create", "r1", "--from-backup", "b1", "--namespace-mappings", "demo:demo-copy", "--resource-modifier-configmap", "my-modifiers"},
	} {
		o, out, _ := testOptions(c)
		code, _ := run(o, args...)
		c.Assert(code, Equals, 0, Commentf("%v", args))
		nar := &v1alpha1.NonAdminRestore{}
		c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "r1"}, nar), IsNil)
		c.Check(nar.Spec.RestoreSpec.NamespaceMapping, DeepEquals, map[string]string{"demo": "demo-copy"})
		c.Check(*nar.Spec.RestoreSpec.ResourceModifier, DeepEquals, corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "my-modifiers"})
		out.Reset()
		code, _ = run(o, "restore", "describe", "r1")
		c.Assert(code, Equals, 0)
		c.Check(out.String(), Matches, `(?s).*Namespace Mapping: +demo → demo-copy\nResource Modifiers: +ConfigMap my-modifiers\n.*`)
	}
}

func (s *CommandsSuite) TestBadFlagsAreRefusedAndCreateNothing(c *C) {
	for _, args := range [][]string{
		{"backup", "create", "b1", "-l", "a=b", "--or-selector", "c=d"},
		{"backup", "create", "b1", "--include-resources", "pods", "--include-namespace-scoped-resources", "pods"},
		{"backup", "create", "b1", "--ordered-resources", "pods"},
		{"backup", "create"},
		{"restore", "create", "r1"},
		{"restore", "create", "r1", "--from-backup", "b1", "--existing-resource-policy", "replace"},
		{"bsl", "create", "l1", "--provider", "aws", "--bucket", "b", "--credential", "a=x,b=y"},
		{"bsl", "create", "l1", "--provider", "aws", "--bucket", "b"},
	} {
		o, _, errOut := testOptions(c)
		code, _ := run(o, args...)
		c.Check(code, Equals, 2, Commentf("%v", args))
		c.Check(errOut.String(), Matches, `Error: .+\n`, Commentf("%v", args))
		for _, l := range []client.ObjectList{&v1alpha1.NonAdminBackupList{}, &v1alpha1.NonAdminRestoreList{}, &v1alpha1.NonAdminBackupStorageLocationList{}} {
			c.Assert(o.client.List(context.Background(), l), IsNil)
			items, _ := metaExtractList(l)
			c.Check(items, HasLen, 0, Commentf("%v created something", args))
		}
	}
}

// TestRefusedFlags: the flags of OADP's CLI whose values the tenant rules
// always refuse are neither in the help nor in docs/cli.md, and using one
// fails with the rule and creates nothing; --include-cluster-resources=false
// (no cluster-scoped resources at all) still works.
func (s *CommandsSuite) TestRefusedFlags(c *C) {
	ref, err := CLIReference()
	c.Assert(err, IsNil)
	for _, args := range [][]string{
		{"backup", "create", "b1", "--include-cluster-scoped-resources", "storageclasses"},
		{"backup", "create", "b1", "--volume-snapshot-locations", "vsl1"},
		{"backup", "create", "b1", "--resource-policies-configmap", "policies"},
		{"backup", "create", "b1", "--include-cluster-resources"},
		{"restore", "create", "r1", "--from-backup", "b1", "--include-cluster-resources=true"},
	} {
		flag := args[len(args)-1]
		if !strings.HasPrefix(flag, "--") {
			flag = args[len(args)-2]
		}
		flag, _, _ = strings.Cut(flag, "=")
		// A flag is offered by a line of the flags list: indented, the
		// flag first. The help text may name it as refused.
		offered := regexp.MustCompile(`(?m)^[ \t]+(-\w, )?` + regexp.QuoteMeta(flag) + `\b`)
		c.Check(offered.MatchString(ref), Equals, false, Commentf("docs/cli.md offers %s", flag))
		o, out, errOut := testOptions(c)
		code, _ := run(o, args[0], "create", "--help")
		c.Check(code, Equals, 0)
		c.Check(offered.MatchString(out.String()), Equals, false, Commentf("%s create --help offers %s", args[0], flag))
		c.Check(out.String(), Matches, `(?s).*\n  -w, --wait .*`) // the list the regexp reads
		o, _, errOut = testOptions(c)
		code, _ = run(o, args...)
		c.Check(code, Equals, 2, Commentf("%v", args))
		c.Check(errOut.String(), Matches, `Error: .*nacflow refuses .*\n`, Commentf("%v", args))
		for _, l := range []client.ObjectList{&v1alpha1.NonAdminBackupList{}, &v1alpha1.NonAdminRestoreList{}} {
			c.Assert(o.client.List(context.Background(), l), IsNil)
			items, _ := metaExtractList(l)
			c.Check(items, HasLen, 0, Commentf("%v created something", args))
		}
	}
	o, _, errOut := testOptions(c)
	code, _ := run(o, "backup", "create", "b1", "--include-cluster-resources=false")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	nab := &v1alpha1.NonAdminBackup{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b1"}, nab), IsNil)
	c.Check(*nab.Spec.BackupSpec.IncludeClusterResources, Equals, false)
}

func (s *CommandsSuite) TestRestoreCreateTakesEitherBackupFlag(c *C) {
	for _, flag := range []string{"--from-backup", "--backup-name"} {
		o, _, errOut := testOptions(c)
		code, _ := run(o, "restore", "create", "r1", flag, "b1", "--include-resources", "configmaps", "--existing-resource-policy", "update")
		c.Assert(code, Equals, 0, Commentf("%s", errOut))
		nar := &v1alpha1.NonAdminRestore{}
		c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "r1"}, nar), IsNil)
		c.Check(nar.Spec.RestoreSpec.BackupName, Equals, "b1")
		c.Check(nar.Spec.RestoreSpec.IncludedResources, DeepEquals, []string{"configmaps"})
		c.Check(nar.Spec.RestoreSpec.ExistingResourcePolicy, Equals, velerov1.PolicyTypeUpdate)
	}
}

func (s *CommandsSuite) TestBackupDelete(c *C) {
	nab := func(name string) *v1alpha1.NonAdminBackup {
		return &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
			Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	}
	o, out, _ := testOptions(c, nab("b1"), nab("b2"))
	// Without --confirm, anything but y/yes cancels.
	o.In = strings.NewReader("n\n")
	code, _ := run(o, "backup", "delete", "b1")
	c.Assert(code, Equals, 0)
	c.Check(out.String(), Matches, `(?s)Are you sure you want to delete backup "b1"\? \(y/N\): Deletion cancelled.\n`)
	got := &v1alpha1.NonAdminBackup{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b1"}, got), IsNil)
	c.Check(got.Spec.DeleteBackup, Equals, false)

	// --confirm sets deleteBackup (OADP's CLI: the controller deletes).
	code, _ = run(o, "backup", "delete", "b1", "--confirm")
	c.Assert(code, Equals, 0)
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b1"}, got), IsNil)
	c.Check(got.Spec.DeleteBackup, Equals, true)

	// --keep-data is a plain delete; "yes" confirms.
	o.In = strings.NewReader("yes\n")
	code, _ = run(o, "backup", "delete", "b2", "--keep-data")
	c.Assert(code, Equals, 0)
	err := o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "b2"}, got)
	c.Check(apierrors.IsNotFound(err), Equals, true)

	// A missing backup fails the command with the count.
	o2, _, errOut := testOptions(c)
	code, _ = run(o2, "backup", "delete", "nope", "--confirm")
	c.Check(code, Equals, 2)
	c.Check(errOut.String(), Matches, `(?s)Failed to delete NonAdminBackup nope: .*not found\nError: 1 of 1 NonAdminBackups could not be deleted\n`)
}

func (s *CommandsSuite) TestRequestApproveAndReject(c *C) {
	req := func(name, ns string) *v1alpha1.NonAdminBackupStorageLocationRequest {
		return &v1alpha1.NonAdminBackupStorageLocationRequest{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-mine-" + name, Namespace: "openshift-adp"},
			Spec:       v1alpha1.NonAdminBackupStorageLocationRequestSpec{ApprovalDecision: v1alpha1.ApprovalPending},
			Status:     v1alpha1.NonAdminBackupStorageLocationRequestStatus{SourceNonAdminBSL: &v1alpha1.SourceNonAdminBSL{Namespace: ns, Name: "mine", NACUUID: name}},
		}
	}
	o, out, errOut := testOptions(c, req("1", "demo"), req("2", "other"))
	// "mine" is in two namespaces: ambiguous.
	code, _ := run(o, "bsl", "request", "approve", "mine")
	c.Check(code, Equals, 2)
	c.Check(errOut.String(), Matches, `Error: "mine" names the locations of several namespaces \(demo/mine, other/mine\): give NAMESPACE/NAME\n`)

	code, _ = run(o, "bsl", "request", "approve", "demo/mine", "--reason", "owned by team A")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Equals, "Request demo-mine-1 (NonAdminBackupStorageLocation demo/mine) approved.\n")
	got := &v1alpha1.NonAdminBackupStorageLocationRequest{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "openshift-adp", Name: "demo-mine-1"}, got), IsNil)
	c.Check(got.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalApprove)
	c.Check(got.Annotations[AnnotationApprovalReason], Equals, "owned by team A")

	// deny is reject's alias (OADP's file name); by the request's name.
	code, _ = run(o, "bsl", "request", "deny", "other-mine-2")
	c.Assert(code, Equals, 0)
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "openshift-adp", Name: "other-mine-2"}, got), IsNil)
	c.Check(got.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalReject)
	// The other tenant's request is untouched by both.
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "openshift-adp", Name: "demo-mine-1"}, got), IsNil)
	c.Check(got.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalApprove)
}

func (s *CommandsSuite) TestFetchGunzips(c *C) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("level=info msg=\"Backup completed\" backup=openshift-adp/demo-b1\n"))
	c.Assert(w.Close(), IsNil)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gz":
			_, _ = rw.Write(gz.Bytes())
		case "/plain":
			_, _ = rw.Write([]byte("plain text\n"))
		default:
			http.Error(rw, "NoSuchKey", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	var data bytes.Buffer
	c.Assert(fetch(context.Background(), srv.URL+"/gz", "", &data, true), IsNil)
	c.Check(data.String(), Equals, "level=info msg=\"Backup completed\" backup=openshift-adp/demo-b1\n")
	data.Reset()
	c.Assert(fetch(context.Background(), srv.URL+"/gz", "", &data, false), IsNil)
	c.Check(data.Bytes(), DeepEquals, gz.Bytes(), Commentf("kept gzipped: backup download"))
	data.Reset()
	c.Assert(fetch(context.Background(), srv.URL+"/plain", "", &data, true), IsNil)
	c.Check(data.String(), Equals, "plain text\n")
	err := fetch(context.Background(), srv.URL+"/gone", "", &data, true)
	c.Check(err, ErrorMatches, `downloading: the object store answered 404 Not Found: NoSuchKey`)
}

// TestDownloadInMemoryIsBounded: a file read into memory (a resource list
// for describe --details) stops at the bound, however small its gzip is.
func (s *CommandsSuite) TestDownloadInMemoryIsBounded(c *C) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(make([]byte, 1<<20))
	c.Assert(w.Close(), IsNil)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { _, _ = rw.Write(gz.Bytes()) }))
	defer srv.Close()
	b := &cappedBuffer{max: 64 << 10}
	err := fetch(context.Background(), srv.URL, "", b, true)
	c.Check(err, ErrorMatches, "downloading: the file is over 65536 bytes uncompressed, more than is read into memory .*")
	c.Check(b.buf.Len() <= 64<<10, Equals, true)
	b = &cappedBuffer{max: 2 << 20}
	c.Assert(fetch(context.Background(), srv.URL, "", b, true), IsNil)
	c.Check(b.buf.Len(), Equals, 1<<20)
}

func (s *CommandsSuite) TestDownloadNameFitsAGenerateName(c *C) {
	c.Check(downloadName("b1", velerov1.DownloadTargetKindBackupLog), Equals, "b1-backuplog-")
	long := downloadName(strings.Repeat("x", 250), velerov1.DownloadTargetKindBackupResourceList)
	c.Check(len(long) <= 58, Equals, true)
	c.Check(strings.HasSuffix(long, "-"), Equals, true)
}

// TestEveryCommandHasAnExample: --help shows an example everywhere.
func (s *CommandsSuite) TestEveryCommandHasAnExample(c *C) {
	o, _, _ := testOptions(nil)
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() != "help" {
			c.Check(cmd.Example != "", Equals, true, Commentf("%s has no example", cmd.CommandPath()))
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(o))
}

// TestHelpTextNamesEveryCommand: help.txt has a section for every command
// but cobra's own (help, completion), and none for a command that is gone.
func (s *CommandsSuite) TestHelpTextNamesEveryCommand(c *C) {
	helps, err := parseHelp(helpText)
	c.Assert(err, IsNil)
	parsed, err := parseHelp(helpText)
	c.Assert(err, IsNil)
	o, _, _ := testOptions(nil)
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			return
		}
		if path := cmd.Annotations[helpPathAnnotation]; path != "" {
			// OADP's word for a command: that command's help.
			_, ok := parsed[path]
			c.Check(ok, Equals, true, Commentf("%q shows the help of %q, which help.txt lacks", cmd.CommandPath(), path))
			c.Check(cmd.Hidden || cmd.Parent().Hidden || cmd.Parent().Parent().Hidden, Equals, true, Commentf("%q is listed twice in the reference", cmd.CommandPath()))
			c.Check(cmd.Short, Not(Equals), "", Commentf(cmd.CommandPath()))
		} else if !cmd.Hidden && (cmd.Parent() == nil || !cmd.Parent().Hidden) {
			_, ok := helps[cmd.CommandPath()]
			c.Check(ok, Equals, true, Commentf("help.txt has no section %q", cmd.CommandPath()))
			delete(helps, cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(o))
	c.Check(helps, HasLen, 0, Commentf("help.txt has sections for no command: %v", helps))
	_, err = parseHelp("## kubectl nac x\n\nshort\n\nlong only\n")
	c.Check(err, ErrorMatches, `help.txt: section "kubectl nac x" has 2 paragraphs, want Short, Long and Example`)
}

func (s *CommandsSuite) TestCLIReferenceIsCurrent(c *C) {
	page, err := CLIReference()
	c.Assert(err, IsNil)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "cli.md"))
	c.Assert(err, IsNil)
	c.Check(page == string(doc), Equals, true, Commentf("docs/cli.md is stale: run make docs"))
	for _, cmd := range []string{"backup create", "backup logs", "restore create", "bsl request approve", "blueprint diff", "completion bash"} {
		c.Check(strings.Contains(page, "\n## kubectl nac "+cmd+"\n"), Equals, true, Commentf(cmd))
	}
}

func (s *CommandsSuite) TestCompletionScripts(c *C) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		o, out, errOut := testOptions(nil)
		code := ExitCode(context.Background(), o, []string{"completion", shell})
		c.Assert(code, Equals, 0, Commentf("%s: %s", shell, errOut))
		c.Check(strings.Contains(out.String(), "kubectl-nac"), Equals, true, Commentf(shell))
	}
}

// TestNameCompletion: backup names come from the tenant's namespace only.
func (s *CommandsSuite) TestNameCompletion(c *C) {
	o, out, _ := testOptions(c,
		&v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "demo"}, Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}},
		&v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "other"}, Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}})
	code, _ := run(o, cobra.ShellCompRequestCmd, "backup", "describe", "")
	c.Assert(code, Equals, 0)
	c.Check(out.String(), Matches, "mine\n:4\n(?s).*")
	c.Check(strings.Contains(out.String(), "theirs"), Equals, false)
}

// TestWaitFollowsToTheEnd: --wait shows each change the controller writes
// and exits 0 on a Completed backup, 1 with the failing phase's message.
func (s *CommandsSuite) TestWaitFollowsToTheEnd(c *C) {
	for _, tc := range []struct {
		final *v1alpha1.NonAdminBackup
		code  int
		last  string
	}{
		{completedBackup(), 0, `NonAdminBackup b1 completed in 0s. Velero Backup openshift-adp/demo-b1-1a2b3c Completed: 3 of 3 items, 1 warnings, 0 errors`},
		{failedBackup(), 1, `Error: NonAdminBackup b1 failed: phase validate \(ValidateBackupSpec\) failed: spec.backupSpec.includedNamespaces: \[other\] names another namespace; .*`},
	} {
		o, out, errOut := testOptions(c)
		o.ConfigFlags.Namespace = ptr.To("demo")
		done := make(chan int)
		go func() {
			done <- ExitCode(context.Background(), o, []string{"backup", "create", "b1", "--wait"})
		}()
		// Play the controller: a waiting plan, then the final status.
		nab := &v1alpha1.NonAdminBackup{}
		key := client.ObjectKey{Namespace: "demo", Name: "b1"}
		for o.client.Get(context.Background(), key, nab) != nil {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		waiting := waitingBackup()
		nab.Status = waiting.Status
		c.Assert(o.client.Status().Update(context.Background(), nab), IsNil)
		time.Sleep(20 * time.Millisecond)
		nab.Status = tc.final.Status
		c.Assert(o.client.Status().Update(context.Background(), nab), IsNil)
		select {
		case code := <-done:
			c.Check(code, Equals, tc.code, Commentf("%s%s", out, errOut))
		case <-time.After(10 * time.Second):
			c.Fatalf("--wait did not end: %s", out)
		}
		c.Check(out.String(), Matches, `(?s).*\[3/4\] waitForBackup \(WaitFor\) waiting · 20 of 40 items.*`)
		c.Check(out.String()+errOut.String(), Matches, `(?s).*`+tc.last+`\n`)
	}
}

// TestGetOutputFormats: -o yaml of one object prints it with its kind;
// -o name prints kind/name lines; a table when unset.
func (s *CommandsSuite) TestGetOutputFormats(c *C) {
	o, out, _ := testOptions(nil)
	o.ConfigFlags.Namespace = ptr.To("demo")
	g := addGetFlags(&cobra.Command{Use: "get"}, true)
	format := "yaml"
	g.print.OutputFormat = &format
	list := &v1alpha1.NonAdminBackupList{Items: []v1alpha1.NonAdminBackup{*completedBackup()}}
	c.Assert(g.printList(o, testScheme(c), list, BackupTable), IsNil)
	c.Check(out.String(), Matches, `(?s)apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\n.*name: b1\n.*`)
	out.Reset()
	format = "name"
	list.Items = append(list.Items, *waitingBackup())
	c.Assert(g.printList(o, testScheme(c), list, BackupTable), IsNil)
	c.Check(out.String(), Equals, "nonadminbackup.oadp.openshift.io/b1\nnonadminbackup.oadp.openshift.io/b2\n")
}
