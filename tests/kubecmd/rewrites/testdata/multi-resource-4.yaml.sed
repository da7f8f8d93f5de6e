# kube 1.22 removed apiextensions.k8s.io/v1beta1: the same CRD in v1 (a v1beta1 CRD without a schema kept
# every field, as x-kubernetes-preserve-unknown-fields does)
s|^apiVersion: apiextensions.k8s.io/v1beta1$|apiVersion: apiextensions.k8s.io/v1|
s|^  version: v1$|  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]|
