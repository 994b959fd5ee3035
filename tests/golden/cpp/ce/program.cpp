int main() { undefined_name; }
