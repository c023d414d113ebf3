// Click-to-zoom for the pictures of the site: a click (or Enter) on a picture opens it at its
// natural size over the page, scrollable when larger than the window; a click anywhere, Enter
// or Escape closes it. Written here rather than taken from a plugin: no network, no dependency.
const openLightbox = (img) => {
  const box = document.createElement("div");
  box.className = "dgp-lightbox";
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", img.alt || "figure");
  box.tabIndex = -1;
  const big = document.createElement("img");
  big.src = img.currentSrc || img.src;
  big.alt = img.alt;
  big.width = img.naturalWidth;
  big.height = img.naturalHeight;
  box.appendChild(big);
  const close = () => {
    box.remove();
    document.removeEventListener("keydown", onKey);
    img.focus();
  };
  const onKey = (event) => {
    if (event.key === "Escape" || event.key === "Enter") close();
  };
  box.addEventListener("click", close);
  document.addEventListener("keydown", onKey);
  document.body.appendChild(box);
  box.focus();
};

const makeZoomable = () => {
  for (const img of document.querySelectorAll(".md-content .md-typeset img")) {
    if (img.classList.contains("dgp-zoomable") || img.closest("a")) continue;
    img.classList.add("dgp-zoomable");
    img.tabIndex = 0;
    img.setAttribute("role", "button");
    img.title = img.title || "Click to open at full size";
    img.addEventListener("click", () => openLightbox(img));
    img.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        event.stopPropagation();
        openLightbox(img);
      }
    });
  }
};

// Material's instant navigation swaps pages without a reload: document$ emits for each page.
document$.subscribe(makeZoomable);
