# kubectl 1.24 removed --generator; 1.20's service/v1 generator named the port "default", which the
# next assertion checks: the same Service through --overrides
s| --generator=service/v1| --overrides='{"spec":{"ports":[{"name":"default","port":80}]}}'|
# kube >= 1.23 prefers autoscaling/v2, which has no targetCPUUtilizationPercentage (its cpu target is a metric);
# the assertions read that v1 field, so they ask for the HPA as autoscaling/v1 (still served), as 1.20's kubectl got it
s|get_object_assert 'hpa \([a-z-]*\)'|get_object_assert 'horizontalpodautoscalers.v1.autoscaling \1'|
