// Starts Azurite's blob service (installed beside this file by `npm ci`) and ends it when the process that started
// this one ends, even by SIGKILL: a test run that dies leaves no emulator behind.
// usage: node launch.js PARENT_PID [azurite-blob arguments...]
"use strict";
const { spawn } = require("child_process");
const path = require("path");

const parent = Number(process.argv[2]);
const bin = path.join(__dirname, "node_modules", "azurite", "dist", "src", "blob", "main.js");
const child = spawn(process.execPath, [bin, ...process.argv.slice(3)], { stdio: "inherit" });

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const watch = setInterval(() => {
  if (!alive(parent)) {
    child.kill("SIGKILL");
    process.exit(0);
  }
}, 500);

child.on("exit", (code) => {
  clearInterval(watch);
  process.exit(code ?? 1);
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    child.kill("SIGKILL");
    process.exit(0);
  });
}
