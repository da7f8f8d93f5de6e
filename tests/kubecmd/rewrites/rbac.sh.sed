# kubectl >= 1.21 prints this through its warning handler: "Warning: ..." (1.20: "warning: ...")
s|'warning: deleting cluster-scoped resources'|'Warning: deleting cluster-scoped resources'|
# rbac.authorization.k8s.io/v1beta1 (the deprecated API these lines probe) is gone since kube 1.22
/kubectl get roles.v1beta1.rbac.authorization.k8s.io/,/Error: 1 warning received/d
