s=$(head -c 600000000 /dev/zero | tr "\\0" x)
echo ${#s}
