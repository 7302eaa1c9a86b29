{{/* The chart's name: nameOverride or kubecel. */}}
{{- define "kubecel.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object's name: fullnameOverride, else the release's name when it
holds the chart's, else <release>-<chart>. Cluster-scoped objects (the ClusterRoles) carry
it too, so that two releases in one cluster never share them.
*/}}
{{- define "kubecel.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "kubecel.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. Helm's own (chart, instance, version, managed-by) come first. */}}
{{- define "kubecel.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/name: {{ include "kubecel.name" . }}
app.kubernetes.io/part-of: kubecel
{{- end -}}

{{/* The labels that select the controller's pods (the Deployment, PDB and PodMonitor). */}}
{{- define "kubecel.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubecel.name" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "kubecel.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kubecel.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The installation's name (kubecel run --installation): installation, else the fullname. */}}
{{- define "kubecel.installation" -}}
{{- default (include "kubecel.fullname" .) .Values.installation -}}
{{- end -}}

{{/* The identity Secret's name: <installation>-identity. */}}
{{- define "kubecel.identitySecret" -}}
{{- printf "%s-identity" (include "kubecel.installation" .) -}}
{{- end -}}

{{/*
The label that aggregates ClusterRoles into the controller's: the one kubecel rbac prints
for the installation kubecel, kubecel.dev/aggregate-to-<installation> for any other, so
that two installations in one cluster never gather each other's permissions.
*/}}
{{- define "kubecel.aggregationLabel" -}}
{{- $installation := include "kubecel.installation" . -}}
{{- if eq $installation "kubecel" -}}
kubecel.dev/aggregate-to-controller
{{- else -}}
{{- printf "kubecel.dev/aggregate-to-%s" $installation -}}
{{- end -}}
{{- end -}}

{{/* The image: repository@digest when a digest is set, else repository:tag (tag defaults to appVersion). */}}
{{- define "kubecel.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The namespace of the rules ConfigMaps: rules.namespace, else the release's. */}}
{{- define "kubecel.rulesNamespace" -}}
{{- default .Release.Namespace .Values.rules.namespace -}}
{{- end -}}

{{/* The rules ConfigMap read by name: rules.existingConfigMap, else <fullname>-rules. */}}
{{- define "kubecel.rulesConfigMap" -}}
{{- default (printf "%s-rules" (include "kubecel.fullname" .)) .Values.rules.existingConfigMap -}}
{{- end -}}

{{/* rules.selector as a label selector: key=value pairs, sorted, comma-separated. */}}
{{- define "kubecel.rulesSelector" -}}
{{- $pairs := list -}}
{{- range $k, $v := .Values.rules.selector -}}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
