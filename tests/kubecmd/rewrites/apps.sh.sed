# kubectl 1.24 removed --generator (kubectl 1.20 still took service/v1, its only generator for expose)
s| --generator=service/v1||
