{{/* The labels every object of the release carries. */}}
{{- define "tfk8s.labels" -}}
app.kubernetes.io/name: tfk8s
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tfk8s
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The labels that select the controller's pods: stable across upgrades. */}}
{{- define "tfk8s.selectorLabels" -}}
app.kubernetes.io/name: tfk8s
app.kubernetes.io/component: controller
{{- end }}

{{- define "tfk8s.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "tfk8s.agentImage" -}}
{{ .Values.agentImage.repository }}:{{ .Values.agentImage.tag | default .Chart.AppVersion }}
{{- end }}
