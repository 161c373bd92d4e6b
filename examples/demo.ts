// A demo program for `codemode run`: TypeScript as a model would write it, run as the body of an
// async function in the sandbox. Only the console output and the return value come back.

enum Level { Low = "low", High = "high" }

interface Reading { sensor: string; value: number }

class Summary {
  constructor(public readonly count: number, private readonly total: number) {}
  get mean(): number { return this.count === 0 ? 0 : this.total / this.count; }
}

const readings: Reading[] = Array.from({ length: 1000 }, (_, i) => ({
  sensor: `s${i % 7}`,
  value: Math.sin(i) * 50 + 50,
}));

// Intermediate values stay in the sandbox; only the summary is printed and returned.
await new Promise((resolve) => setTimeout(resolve, 5));
const bySensor = new Map<string, Summary>();
for (const sensor of new Set(readings.map((r) => r.sensor))) {
  const values = readings.filter((r) => r.sensor === sensor).map((r) => r.value);
  bySensor.set(sensor, new Summary(values.length, values.reduce((a, b) => a + b, 0)));
}

const hot = [...bySensor].filter(([, s]) => s.mean > 50).map(([name]) => name);
console.log(`analysed ${readings.length} readings from ${bySensor.size} sensors`);
console.table([...bySensor].slice(0, 3).map(([sensor, s]) => ({ sensor, mean: Number(s.mean.toFixed(2)) })));

return {
  level: hot.length > 3 ? Level.High : Level.Low,
  hotSensors: hot,
  checksum: btoa(new TextDecoder().decode(new TextEncoder().encode(hot.join(",")))),
};
