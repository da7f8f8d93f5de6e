# kube 1.22 removed apiextensions.k8s.io/v1beta1: the same CRD in v1 (a v1beta1 CRD without a schema kept
# every field, as x-kubernetes-preserve-unknown-fields does)
/"apiVersion": "apiextensions.k8s.io\/v1beta1",/,/^__EOF__$/{
  s|"apiextensions.k8s.io/v1beta1"|"apiextensions.k8s.io/v1"|
  s|"version": "v1alpha1",|"versions": [{"name": "v1alpha1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],|
}
# kubectl 1.26 renamed --prune-whitelist to --prune-allowlist and later releases dropped the old name
s|--prune-whitelist|--prune-allowlist|g
