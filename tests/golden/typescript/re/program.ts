const input: string = require("fs").readFileSync(0, "utf8");
throw new Error("bad input " + input.length);
