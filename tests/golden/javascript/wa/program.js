const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/);
console.log(a + b);
