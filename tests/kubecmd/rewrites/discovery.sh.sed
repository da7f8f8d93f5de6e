# kube >= 1.27 fills singularName in discovery ("configmap"); 1.20 left it empty
s|{"name":"configmaps","singularName":"",|{"name":"configmaps","singularName":"configmap",|
# the harness's server has its own admin token, not kube's hack/testdata/auth-tokens.csv
s|'Authorization: Bearer admin-token'|"Authorization: Bearer ${KUBECMD_TOKEN}"|
