read a b
echo "no such thing" >&2
exit 3
