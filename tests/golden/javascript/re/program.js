null.x;
