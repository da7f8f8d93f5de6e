# kubectl 1.24 removed --generator; 1.20's service/v1 generator named the port "default", which the
# next assertion checks: the same Service through --overrides
s| --generator=service/v1| --overrides='{"spec":{"ports":[{"name":"default","port":80}]}}'|
# kubectl >= 1.21 prints this through its warning handler: "Warning: ..." (1.20: "warning: ...")
s|'warning: deleting cluster-scoped resources'|'Warning: deleting cluster-scoped resources'|
# kubectl 1.24 removed `kubectl run --expose --service-overrides`: the dry runs drop them, the real run
# becomes `run` then `expose pod` with the same overrides (1.20's --expose made the same Service)
/kubectl run testmetadata .*--expose --dry-run/s| --expose\(.*\) --service-overrides=.*$|\1|
s|^\(  kubectl run testmetadata --image=nginx --port=80\) --expose --service-overrides=\(.*\)$|\1\n  kubectl expose pod testmetadata --port=80 --overrides=\2|
# kube removed authentication.k8s.io/v1beta1 (TokenReview) in 1.22: the v1 line after it stays
/tokenreview-v1beta1\.json/d
