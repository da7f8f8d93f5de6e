# kube dropped this check (kubernetes#109041) when kubectl >= 1.24 left validation to the server: the server
# decodes a null string argument as "" (Go's zero value), so only 1.20's client-side validation refused it
/## kubectl create should not panic on empty string lists in a template/,/rm "\${ERROR_FILE}"/d
# kubectl 1.21 removed `kubectl convert` (now a plugin): the pod's YAML goes to --raw as it is, and kube
# >= 1.21 answers a Pod posted to namespaces with this wording (kube's create.sh since says the same)
s#grep -q "cannot be handled as a Namespace: converting (v1.Pod)" <<< "\$( kubectl convert -f \(test/fixtures/doc-yaml/admin/limitrange/valid-pod.yaml\) -o json | kubectl create "\${kube_flags\[@\]}" --raw /api/v1/namespaces -f - #grep -q 'the object provided is unrecognized (must be of type Namespace)' <<< "$( kubectl create "${kube_flags[@]}" --raw /api/v1/namespaces -f \1 #
