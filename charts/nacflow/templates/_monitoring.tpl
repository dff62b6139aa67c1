{{/*
The Secret holding the token the ServiceMonitor and the PodMonitor scrape
with: monitoring.scrapeToken.secretName, or the one metrics-scraper.yaml
makes.
*/}}
{{- define "nacflow.scrapeTokenSecret" -}}
{{- if .Values.monitoring.scrapeToken.secretName -}}
{{- .Values.monitoring.scrapeToken.secretName -}}
{{- else if .Values.monitoring.scrapeToken.create -}}
nacflow-metrics-scraper-token
{{- else -}}
{{- fail "monitoring.scrapeToken.secretName: name the Secret holding the scrape token, or set monitoring.scrapeToken.create" -}}
{{- end -}}
{{- end -}}

{{/*
Whether a monitor is enabled: "true" or "".
*/}}
{{- define "nacflow.monitorEnabled" -}}
{{- if or .Values.monitoring.serviceMonitor.enabled .Values.monitoring.podMonitor.enabled }}true{{ end -}}
{{- end -}}

{{/*
A monitor endpoint's authentication and label handling, the same for the
ServiceMonitor and the PodMonitor. honorLabels: nacflow's series name the
tenant in their own label namespace; without it the operator's target label
namespace (the OADP namespace) would win and the tenant's become
exported_namespace, which no query of docs/metrics.md or the dashboards
reads.
*/}}
{{- define "nacflow.scrapeAuth" -}}
honorLabels: true
authorization:
  type: Bearer
  credentials:
    name: {{ include "nacflow.scrapeTokenSecret" . }}
    key: {{ .Values.monitoring.scrapeToken.key }}
{{- end -}}
