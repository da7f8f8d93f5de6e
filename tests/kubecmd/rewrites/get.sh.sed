# kube >= 1.23 prefers autoscaling/v2: `kubectl get all` lists HorizontalPodAutoscalers there (v1 in kube 1.20)
s|/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers 200|/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers 200|
# kubectl >= 1.34 logs a response at --v=6 as `"Response" verb="GET" url="<url>" status="200 OK"`, older ones as
# `GET <url> 200 OK`: the checks of the logged URLs (grep patterns) accept both forms
/^  kube::test::if_has\(_not\)\?_string "\${output_message}" "\/[^"]* 200\( OK\)\?"$/ s| 200|\\(\\" status=\\"\\\| \\)200|
