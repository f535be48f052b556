FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
COPY pyproject.toml ./
# CPU torch first so sentence-transformers does not pull a CUDA build; set TORCH_INDEX for GPU hosts.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --index-url ${TORCH_INDEX} torch==2.13.0 && pip install --no-cache-dir .
COPY . .
RUN python manage.py collectstatic --noinput 2>/dev/null || true
EXPOSE 8000
CMD ["gunicorn", "bulkhead.wsgi:application", "--bind", "0.0.0.0:8000"]
