// Runs in <head>, before the body is drawn: styles that need JavaScript (the collapsed
// narrow-screen menu) apply from the first paint. A file, not inline: the CSP runs no inline script.
document.documentElement.classList.replace("no-js", "js");
