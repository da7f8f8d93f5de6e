{{/* Names: <release>-kcp unless the release name already says kcp. */}}
{{- define "kcp.fullname" -}}
{{- if contains "kcp" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kcp" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kcp.labels" -}}
app.kubernetes.io/name: kcp
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "apiserver") */}}
{{- define "kcp.selector" -}}
app.kubernetes.io/name: kcp
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kcp.image" -}}
{{ printf "%s:%s" .repository .tag | quote }}
{{- end -}}

{{- define "kcp.apiserverService" -}}
{{ include "kcp.fullname" . }}-apiserver
{{- end -}}

{{/* The Secret holding the CA, the admin token, the service-account key and admin.kubeconfig. */}}
{{- define "kcp.pkiSecret" -}}
{{ include "kcp.fullname" . }}-pki
{{- end -}}

{{- define "kcp.etcdHeadless" -}}
{{ include "kcp.fullname" . }}-etcd-peers
{{- end -}}

{{/* Comma-separated etcd endpoints: the external ones, or each member of the StatefulSet. */}}
{{- define "kcp.etcdServers" -}}
{{- if .Values.etcd.external.endpoints -}}
{{- join "," .Values.etcd.external.endpoints -}}
{{- else -}}
{{- $fullname := include "kcp.fullname" . -}}
{{- $peers := include "kcp.etcdHeadless" . -}}
{{- $members := list -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $members = append $members (printf "http://%s-etcd-%d.%s.%s.svc:2379" $fullname $i $peers $.Release.Namespace) -}}
{{- end -}}
{{- join "," $members -}}
{{- end -}}
{{- end -}}

{{- define "kcp.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Environment every controller shares: kcp's kubeconfig, leader election, the health port. */}}
{{- define "kcp.controllerEnv" -}}
- name: {{ .prefix }}_KUBECONFIG
  value: /etc/kcp/admin.kubeconfig
- name: {{ .prefix }}_LEADER_ELECT
  value: {{ .values.leaderElect | quote }}
- name: {{ .prefix }}_HEALTH_PORT
  value: {{ .values.healthPort | quote }}
{{- end -}}
