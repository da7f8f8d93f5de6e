# kubectl 1.24 removed --generator; 1.20's service/v1 generator named the port "default", which the
# next assertion checks: the same Service through --overrides
s| --generator=service/v1| --overrides='{"spec":{"ports":[{"name":"default","port":80}]}}'|
