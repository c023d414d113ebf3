// MathJax 3 configuration for pymdownx.arithmatex (generic mode). MathJax itself is served by
// the site (assets/mathjax/, copied from an installed package by docs/_hooks.py): no network.
// When a page is typeset, <html data-mathjax="typeset"> tells tests (and curious readers).
const markTypeset = () => {
  document.documentElement.dataset.mathjax = "typeset";
};

window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
  startup: {
    pageReady: () => MathJax.startup.defaultPageReady().then(markTypeset),
  },
};

// Material's instant navigation swaps the page without reloading it: typeset the new one. The
// first page is typeset by pageReady above; typesetting it twice would only cost time.
let firstPage = true;
document$.subscribe(() => {
  if (firstPage) {
    firstPage = false;
    return;
  }
  MathJax.startup.promise
    .then(() => {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      return MathJax.typesetPromise();
    })
    .then(markTypeset);
});
