{{/*
The OADP namespace: Velero's, where nacflow runs. oadpNamespace, or the
release's namespace.
*/}}
{{- define "nacflow.namespace" -}}
{{- default .Release.Namespace .Values.oadpNamespace -}}
{{- end -}}

{{/*
Helm's recommended labels, added to each object's own (config/'s). The
selector labels stay config/'s (app.kubernetes.io/name and component), so a
release can take over objects `make deploy` made. hack/chart's HelmLabels
lists these keys: keep the two in step.
*/}}
{{- define "nacflow.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: nacflow
{{- end -}}
